package node

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHost is a host root with what a real node needs, minus what a test removes.
func fakeHost(t *testing.T, without ...string) Host {
	root := t.TempDir()
	files := map[string]string{
		"proc/filesystems": "nodev\tproc\nnodev\toverlay\n",
		"proc/sys/net/bridge/bridge-nf-call-iptables": "0\n",
		"sys/fs/cgroup/cpu/tasks":                     "",
		"sys/fs/cgroup/memory/tasks":                  "",
		"sys/fs/cgroup/pids/tasks":                    "",
		"usr/include/seccomp.h":                       "",
		"usr/include/stdio.h":                         "",
	}
	for _, w := range without {
		delete(files, w)
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := map[string]bool{}
	for _, w := range without {
		missing[w] = true
	}
	return Host{
		Root: root,
		LookPath: func(name string) (string, error) {
			if missing["cmd:"+name] {
				return "", errors.New("not found")
			}
			return "/usr/sbin/" + name, nil
		},
		EUID: func() int { return 0 },
		GOOS: "linux",
	}
}

func TestPreflight(t *testing.T) {
	tests := []struct {
		name    string
		host    func(t *testing.T) Host
		wantErr string
	}{
		{"everything there", func(t *testing.T) Host { return fakeHost(t) }, ""},
		{"cgroup v2 with controllers", func(t *testing.T) Host {
			h := fakeHost(t, "sys/fs/cgroup/cpu/tasks", "sys/fs/cgroup/memory/tasks", "sys/fs/cgroup/pids/tasks")
			if err := os.MkdirAll(filepath.Join(h.Root, "sys/fs/cgroup"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h.Root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return h
		}, ""},
		{"not Linux", func(t *testing.T) Host { h := fakeHost(t); h.GOOS = "darwin"; return h }, "containers need Linux (this is darwin)"},
		{"not root", func(t *testing.T) Host { h := fakeHost(t); h.EUID = func() int { return 1000 }; return h }, "need root"},
		{"no memory controller", func(t *testing.T) Host { return fakeHost(t, "sys/fs/cgroup/memory/tasks") }, "the memory cgroup controller is not available"},
		{"no overlayfs", func(t *testing.T) Host {
			h := fakeHost(t)
			if err := os.WriteFile(filepath.Join(h.Root, "proc/filesystems"), []byte("nodev\tproc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return h
		}, "missing the overlay file system: `chartpilot cluster prepare-host` provides them (kernel modules overlay)"},
		{"no bridge netfilter", func(t *testing.T) Host { return fakeHost(t, "proc/sys/net/bridge/bridge-nf-call-iptables") }, "missing bridge netfilter: `chartpilot cluster prepare-host` provides them (kernel modules br_netfilter)"},
		{"no iptables", func(t *testing.T) Host { return fakeHost(t, "cmd:iptables") }, "missing iptables: `chartpilot cluster prepare-host` provides them (Debian packages iptables)"},
		{"no conntrack", func(t *testing.T) Host { return fakeHost(t, "cmd:conntrack") }, "(Debian packages conntrack)"},
		{"a host kubelet", func(t *testing.T) Host { return withAgent(t, fakeHost(t), "4242", "kubelet", false) }, "another kubelet runs on this host (pid 4242"},
		{"a host kube-proxy", func(t *testing.T) Host { return withAgent(t, fakeHost(t), "77", "kube-proxy", false) }, "another kube-proxy runs"},
		{"the node's own agents", func(t *testing.T) Host {
			h := withAgent(t, fakeHost(t), "4242", "kubelet", true)
			return withAgent(t, h, "4243", "containerd", true)
		}, ""},
		{"a program of another name", func(t *testing.T) Host { return withAgent(t, fakeHost(t), "9", "kubelet-helper", false) }, ""},
		{"another containerd's socket", func(t *testing.T) Host {
			h := fakeHost(t)
			sock := filepath.Join(h.Root, "run/containerd/containerd.sock")
			if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
				t.Fatal(err)
			}
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return h
		}, "another containerd serves /run/containerd/containerd.sock"},
		{"a socket nothing serves", func(t *testing.T) Host {
			h := fakeHost(t)
			write(t, filepath.Join(h.Root, "run/containerd/containerd.sock"), "")
			return h
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.host(t).Preflight()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Preflight() = %v", err)
				}
				return
			}
			var ue *UnavailableError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Preflight() = %v, want one line containing %q", err, tt.wantErr)
			}
		})
	}
}

// withAgent adds a process named comm to h's /proc, in the node's network
// namespace (its ns/net the same file as the node's) or in another one.
func withAgent(t *testing.T, h Host, pid, comm string, inNode bool) Host {
	t.Helper()
	proc := filepath.Join(h.Root, "proc", pid)
	write(t, filepath.Join(proc, "comm"), comm+"\n")
	nodeNS := filepath.Join(h.Root, strings.TrimPrefix(NetNSPath(), "/"))
	if _, err := os.Stat(nodeNS); err != nil {
		write(t, nodeNS, "")
	}
	if inNode {
		if err := os.MkdirAll(filepath.Join(proc, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(nodeNS, filepath.Join(proc, "ns", "net")); err != nil {
			t.Fatal(err)
		}
	} else {
		write(t, filepath.Join(proc, "ns", "net"), "")
	}
	return h
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClaim(t *testing.T) {
	file := filepath.Join(t.TempDir(), "run", "real-node")
	a, b := "/state/a/node", "/state/b/node"
	running := map[string]bool{}
	runs := func(owner string) bool { return running[owner] }
	steps := []struct {
		name      string
		claim     string
		release   string
		running   []string
		wantStale string
		wantErr   string
	}{
		{name: "a free machine", claim: a},
		{name: "claiming again", claim: a, running: []string{a}},
		{name: "a second node while the first runs", claim: b, running: []string{a}, wantErr: "/state/a"},
		{name: "a release by another node changes nothing", release: b, claim: b, running: []string{a}, wantErr: "/state/a"},
		{name: "a claim whose cluster no longer runs is taken over", claim: b, wantStale: a},
		{name: "after the owner's release", release: b, claim: a},
	}
	for _, s := range steps {
		clear(running)
		for _, r := range s.running {
			running[r] = true
		}
		if s.release != "" {
			release(file, s.release)
		}
		stale, err := claim(file, s.claim, runs)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Errorf("%s: err = %v, want one naming %s", s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil || stale != s.wantStale {
			t.Errorf("%s: Claim = %q, %v; want %q", s.name, stale, err, s.wantStale)
		}
		if got, _ := os.ReadFile(file); string(got) != s.claim {
			t.Errorf("%s: the claim is %q, want %q", s.name, got, s.claim)
		}
		// The node that lost the claim leaves the host's setup alone.
		for _, d := range []string{a, b} {
			if got, want := claimedByOther(file, d), d != s.claim; got != want {
				t.Errorf("%s: claimedByOther(%s) = %v, want %v", s.name, d, got, want)
			}
		}
	}
	release(file, a)
	if claimedByOther(file, b) {
		t.Error("a released claim is still another's")
	}
}
