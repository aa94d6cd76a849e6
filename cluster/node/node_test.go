package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"
)

func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		Dir:               filepath.Join(dir, "node"),
		BinDir:            filepath.Join(dir, "bin"),
		Name:              "chartpilot-node",
		Registry:          "127.0.0.1:5001",
		PauseImage:        "127.0.0.1:5001/chartpilot/pause@sha256:0123",
		KubeletKubeconfig: filepath.Join(dir, "kubelet.kubeconfig"),
		ProxyKubeconfig:   filepath.Join(dir, "kube-proxy.kubeconfig"),
		CACert:            filepath.Join(dir, "ca.crt"),
		KubeletCert:       filepath.Join(dir, "kubelet.crt"),
		KubeletKey:        filepath.Join(dir, "kubelet.key"),
		Ports:             Ports{KubeletHealthz: 11001, ProxyHealthz: 11002, ProxyMetrics: 11003},
	}
}

// The files Write renders parse as their programs read them, and say what
// this host needs: runc without systemd, the local registry over HTTP, the
// pause image from it, cgroup v1 through cgroupfs, the API on the node's
// address only.
func TestWrite(t *testing.T) {
	c := testConfig(t)
	if err := c.Write(); err != nil {
		t.Fatal(err)
	}

	var containerd map[string]any
	if _, err := toml.DecodeFile(c.ContainerdConfig(), &containerd); err != nil {
		t.Fatalf("containerd config: %v", err)
	}
	plugins := containerd["plugins"].(map[string]any)
	runtime := plugins["io.containerd.cri.v1.runtime"].(map[string]any)
	runc := dig(t, runtime, "containerd", "runtimes", "runc", "options")
	images := plugins["io.containerd.cri.v1.images"].(map[string]any)
	cni := runtime["cni"].(map[string]any)
	tests := []struct {
		name      string
		got, want any
	}{
		{"runc binary", runc["BinaryName"], filepath.Join(c.BinDir, "runc")},
		{"systemd cgroups", runc["SystemdCgroup"], false},
		{"oom_score_adj restricted", runtime["restrict_oom_score_adj"], true},
		{"sandbox image", dig(t, images, "pinned_images")["sandbox"], c.PauseImage},
		{"registry hosts", dig(t, images, "registry")["config_path"], filepath.Join(c.Dir, "containerd", "certs.d")},
		{"CNI binaries", cni["bin_dirs"], []any{c.CNIBinDir()}},
		{"socket", dig(t, containerd, "grpc")["address"], c.ContainerdSocket()},
		{"root", containerd["root"], c.ContainerdRoot()},
	}
	for _, tt := range tests {
		if !equalJSON(tt.got, tt.want) {
			t.Errorf("containerd %s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}

	hosts, err := os.ReadFile(filepath.Join(c.Dir, "containerd", "certs.d", c.Registry, "hosts.toml"))
	if err != nil || !strings.Contains(string(hosts), `server = "http://127.0.0.1:5001"`) {
		t.Errorf("hosts.toml = %q, %v; want the registry over plain HTTP", hosts, err)
	}

	kubelet := readYAML(t, c.KubeletConfig())
	for key, want := range map[string]any{
		"cgroupDriver": "cgroupfs", "failCgroupV1": false, "address": NodeIP, "port": float64(KubeletPort),
		"healthzBindAddress": NodeIP, "cgroupRoot": CgroupRoot, "readOnlyPort": float64(0), "clusterDNS": []any{ClusterDNS},
		"containerRuntimeEndpoint": "unix://" + c.ContainerdSocket(),
	} {
		if !equalJSON(kubelet[key], want) {
			t.Errorf("kubelet %s = %v, want %v", key, kubelet[key], want)
		}
	}
	if anon := dig(t, kubelet, "authentication", "anonymous")["enabled"]; anon != false {
		t.Errorf("kubelet anonymous auth = %v, want false", anon)
	}

	proxy := readYAML(t, c.ProxyConfig())
	if proxy["mode"] != "iptables" || proxy["healthzBindAddress"] != NodeIP+":11002" {
		t.Errorf("kube-proxy config = %v", proxy)
	}

	var conflist struct {
		Plugins []map[string]any `json:"plugins"`
	}
	data, err := os.ReadFile(filepath.Join(c.Dir, "cni", "net.d", "10-chartpilot.conflist"))
	if err != nil || json.Unmarshal(data, &conflist) != nil || len(conflist.Plugins) == 0 {
		t.Fatalf("CNI conflist %s: %v", data, err)
	}
	if b := conflist.Plugins[0]; b["type"] != "bridge" || b["bridge"] != Bridge || !strings.Contains(string(data), `"gateway": "`+PodGateway+`"`) {
		t.Errorf("bridge plugin = %v", b)
	}
	for _, p := range cniPlugins {
		if target, err := os.Readlink(filepath.Join(c.CNIBinDir(), p)); err != nil || target != filepath.Join(c.BinDir, p) {
			t.Errorf("CNI plugin link %s -> %s, %v", p, target, err)
		}
	}
	// Writing again changes nothing and fails nothing.
	if err := c.Write(); err != nil {
		t.Fatalf("second Write: %v", err)
	}
}

func TestWriteRefusesIncompleteConfig(t *testing.T) {
	c := testConfig(t)
	c.PauseImage = ""
	if err := c.Write(); err == nil || !strings.Contains(err.Error(), "PauseImage") {
		t.Errorf("Write without a pause image = %v", err)
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Write left %s behind", c.Dir)
	}
}

func dig(t *testing.T, m map[string]any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("no %s in %v", k, m)
		}
		m = next
	}
	return m
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Only a process in a cgroup at or below the node's cgroup root is the
// node's: a host kubelet's /kubepods, or a name that merely begins alike,
// is not.
func TestCgroupsUnder(t *testing.T) {
	tests := []struct {
		name, cgroup string
		want         bool
	}{
		{"v1 pod", "12:pids:/chartpilot/kubepods/besteffort/pod1/abc\n11:memory:/chartpilot/kubepods/besteffort/pod1/abc\n", true},
		{"v2 pod", "0::/chartpilot/kubepods/burstable/pod2/def\n", true},
		{"the root itself", "0::/chartpilot\n", true},
		{"a host kubelet's pod", "12:pids:/kubepods/besteffort/pod1/abc\n0::/kubepods/pod3\n", false},
		{"a look-alike name", "0::/chartpilot-other/x\n", false},
		{"the host", "12:pids:/\n0::/user.slice\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cgroupsUnder(tt.cgroup, CgroupRoot); got != tt.want {
				t.Errorf("cgroupsUnder(%q) = %v, want %v", tt.cgroup, got, tt.want)
			}
		})
	}
}
