package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// Write writes the agents' configuration files and links the CNI plugins.
// It changes nothing on the host outside c.Dir.
func (c Config) Write() error {
	if err := c.validate(); err != nil {
		return err
	}
	files := []struct {
		path   string
		render func() ([]byte, error)
	}{
		{c.ContainerdConfig(), c.containerdConfig},
		{c.registryHosts(), c.registryHostsTOML},
		{c.cniConfig(), c.cniConflist},
		{c.KubeletConfig(), c.kubeletConfig},
		{c.resolvConf(), resolvConf},
		{c.ProxyConfig(), c.proxyConfig},
	}
	for _, f := range files {
		data, err := f.render()
		if err != nil {
			return fmt.Errorf("rendering %s: %w", f.path, err)
		}
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.WriteFile(f.path, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return c.linkCNIPlugins()
}

// linkCNIPlugins gives containerd a directory holding only the CNI plugins.
func (c Config) linkCNIPlugins() error {
	if err := os.MkdirAll(c.CNIBinDir(), 0o755); err != nil {
		return err
	}
	for _, p := range cniPlugins {
		link := filepath.Join(c.CNIBinDir(), p)
		target := filepath.Join(c.BinDir, p)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("linking CNI plugin %s: %w", p, err)
		}
	}
	return nil
}

func (c Config) registryHosts() string {
	return c.path("containerd", "certs.d", c.Registry, "hosts.toml")
}

func (c Config) cniConfig() string { return c.path("cni", "net.d", "10-chartpilot.conflist") }

func (c Config) resolvConf() string { return c.path("kubelet", "resolv.conf") }

// containerdTemplate is containerd's configuration: its own root and state
// under the node's directory, runc without systemd (there is none), the
// sandbox image from the local registry, and oom_score_adj restricted
// because the host does not grant CAP_SYS_RESOURCE.
var containerdTemplate = template.Must(template.New("containerd").Parse(`version = 3
root = {{printf "%q" .Root}}
state = {{printf "%q" .State}}
imports = []

[grpc]
  address = {{printf "%q" .Socket}}

[ttrpc]
  address = {{printf "%q" .TTRPC}}

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = {{printf "%q" .Pause}}
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = {{printf "%q" .CertsDir}}

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    cdi_spec_dirs = []
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = {{printf "%q" .Runc}}
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [{{printf "%q" .CNIBin}}]
      conf_dir = {{printf "%q" .CNIConf}}

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'

  [plugins.'io.containerd.internal.v1.opt']
    path = {{printf "%q" .Opt}}

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`))

func (c Config) containerdConfig() ([]byte, error) {
	var b bytes.Buffer
	err := containerdTemplate.Execute(&b, map[string]string{
		"Root":     c.ContainerdRoot(),
		"State":    c.path("containerd", "state"),
		"Socket":   c.ContainerdSocket(),
		"TTRPC":    c.path("containerd", "containerd.sock.ttrpc"),
		"Pause":    c.PauseImage,
		"CertsDir": c.path("containerd", "certs.d"),
		"Runc":     filepath.Join(c.BinDir, "runc"),
		"CNIBin":   c.CNIBinDir(),
		"CNIConf":  filepath.Dir(c.cniConfig()),
		"Opt":      c.path("containerd", "opt"),
	})
	return b.Bytes(), err
}

// registryHostsTOML lets containerd pull from the local registry over
// plain HTTP.
func (c Config) registryHostsTOML() ([]byte, error) {
	return fmt.Appendf(nil, "server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n",
		"http://"+c.Registry, "http://"+c.Registry), nil
}

// cniConflist is the pod network: a bridge whose gateway is the node's
// address, host-local addresses, port mappings.
func (c Config) cniConflist() ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "chartpilot",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      Bridge,
				"isGateway":   true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": c.path("cni", "ipam"),
					"ranges":  []any{[]any{map[string]any{"subnet": PodCIDR, "gateway": PodGateway}}},
					"routes":  []any{map[string]any{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the kubelet's configuration for this host: cgroup v1
// through cgroupfs (no systemd) under the node's own cgroup root, its API
// and health on the node's address only, and
// eviction thresholds low enough that a full disk of a build machine does
// not evict the cluster's own pods.
func (c Config) kubeletConfig() ([]byte, error) {
	conf := map[string]any{
		"apiVersion":               "kubelet.config.k8s.io/v1beta1",
		"kind":                     "KubeletConfiguration",
		"address":                  NodeIP,
		"port":                     KubeletPort,
		"readOnlyPort":             0,
		"healthzBindAddress":       NodeIP,
		"healthzPort":              c.Ports.KubeletHealthz,
		"tlsCertFile":              c.KubeletCert,
		"tlsPrivateKeyFile":        c.KubeletKey,
		"containerRuntimeEndpoint": "unix://" + c.ContainerdSocket(),
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               CgroupRoot,
		"failCgroupV1":             false,
		"failSwapOn":               false,
		"clusterDNS":               []string{ClusterDNS},
		"clusterDomain":            ClusterDomain,
		"resolvConf":               c.resolvConf(),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": c.CACert},
		},
		"authorization":                 map[string]any{"mode": "Webhook"},
		"evictionHard":                  map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
		"imageGCHighThresholdPercent":   100,
		"imageGCLowThresholdPercent":    99,
		"serializeImagePulls":           false,
		"maxPods":                       250,
		"enableServer":                  true,
		"rotateCertificates":            false,
		"serverTLSBootstrap":            false,
		"localStorageCapacityIsolation": false,
		"enforceNodeAllocatable":        []string{},
	}
	return yaml.Marshal(conf)
}

// resolvConf is what pods with dnsPolicy Default see: the cluster has no
// upstream resolver, only loopback.
func resolvConf() ([]byte, error) { return []byte("nameserver 127.0.0.1\n"), nil }

// proxyConfig is kube-proxy in iptables mode, in the node's namespace; it
// leaves the conntrack table size alone (the host may not let it change)
// and keeps node ports off 127.0.0.1.
func (c Config) proxyConfig() ([]byte, error) {
	conf := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"mode":               "iptables",
		"hostnameOverride":   c.Name,
		"clusterCIDR":        PodCIDR,
		"healthzBindAddress": nodeAddr(c.Ports.ProxyHealthz),
		"metricsBindAddress": nodeAddr(c.Ports.ProxyMetrics),
		"clientConnection":   map[string]any{"kubeconfig": c.ProxyKubeconfig},
		"conntrack":          map[string]any{"maxPerCore": 0},
		"iptables":           map[string]any{"localhostNodePorts": false},
		"nodePortAddresses":  []string{PodCIDR},
	}
	return yaml.Marshal(conf)
}
