package node

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// freshDebian is what the issue found on a fresh Debian machine with Go:
// no iptables, no conntrack, no libseccomp headers.
var freshDebian = []string{"cmd:iptables", "cmd:iptables-save", "cmd:iptables-restore", "cmd:conntrack", "usr/include/seccomp.h"}

func TestExplain(t *testing.T) {
	tests := []struct {
		name string
		host func(t *testing.T) Host
		want string
	}{
		{"a fresh Debian machine: every missing piece, one command", func(t *testing.T) Host { return fakeHost(t, freshDebian...) },
			"missing iptables, iptables-save, iptables-restore, conntrack and libseccomp's headers: `chartpilot cluster prepare-host` provides them (Debian packages iptables conntrack libseccomp-dev)"},
		{"not root, modules and commands missing", func(t *testing.T) Host {
			h := fakeHost(t, "proc/sys/net/bridge/bridge-nf-call-iptables", "cmd:modprobe", "cmd:ip", "cmd:gcc", "usr/include/stdio.h")
			h.EUID = func() int { return 1000 }
			return h
		}, "missing bridge netfilter, modprobe, ip, gcc and the C library's headers: `sudo chartpilot cluster prepare-host` provides them (Debian packages kmod iproute2 gcc libc6-dev, kernel modules br_netfilter), then run as root"},
		{"not Debian", func(t *testing.T) Host { return fakeHost(t, "cmd:apt-get", "cmd:conntrack", "cmd:pkg-config") },
			"missing conntrack and pkg-config: install the Debian packages conntrack pkg-config (or your system's equivalents)"},
		{"no cgroup file system mounted", func(t *testing.T) Host {
			return fakeHost(t, "sys/fs/cgroup/cpu/tasks", "sys/fs/cgroup/memory/tasks", "sys/fs/cgroup/pids/tasks")
		}, "missing the cgroup file system: `chartpilot cluster prepare-host` provides them (the cgroup file system's mount)"},
		{"what nothing here provides comes first, with what can be", func(t *testing.T) Host {
			h := withAgent(t, fakeHost(t, "sys/fs/cgroup/pids/tasks", "cmd:conntrack"), "4242", "kubelet", false)
			return h
		}, "the pids cgroup controller is not available; another kubelet runs on this host (pid 4242, ): the real node does not share a host with another Kubernetes node's agents (use the kwok node); missing conntrack: `chartpilot cluster prepare-host` provides them (Debian packages conntrack)"},
		{"only root missing", func(t *testing.T) Host { h := fakeHost(t); h.EUID = func() int { return 1000 }; return h },
			"containerd and the kubelet need root (run as root, or use the kwok node)"},
		{"not Linux: only that", func(t *testing.T) Host { h := fakeHost(t, freshDebian...); h.GOOS = "darwin"; return h },
			"containers need Linux (this is darwin)"},
		{"nothing missing", func(t *testing.T) Host { return fakeHost(t) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host(t)
			_, aptErr := h.LookPath("apt-get")
			if got := Explain(h.Missing(), aptErr == nil); got != tt.want {
				t.Errorf("Explain(Missing()) =\n%s\nwant\n%s", got, tt.want)
			}
			err := h.Preflight()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Preflight() = %v", err)
				}
				return
			}
			if err == nil || err.Error() != "no real node on this host: "+tt.want {
				t.Errorf("Preflight() = %v, want the explanation", err)
			}
		})
	}
}

// machine is a fake host whose package manager, modprobe and mount change
// it as the real ones would.
type machine struct {
	Host
	t       *testing.T
	missing map[string]bool
	ran     []string
	// failInstalls fails that many apt-get installs (stale package lists).
	failInstalls int
	// noop: installing provides nothing.
	noop bool
}

func newMachine(t *testing.T, without ...string) *machine {
	m := &machine{Host: fakeHost(t, without...), t: t, missing: map[string]bool{}}
	for _, w := range without {
		m.missing[w] = true
	}
	m.LookPath = func(name string) (string, error) {
		if m.missing["cmd:"+name] {
			return "", errors.New("not found")
		}
		return "/usr/sbin/" + name, nil
	}
	return m
}

func (m *machine) run(_ context.Context, name string, args ...string) error {
	m.ran = append(m.ran, strings.Join(append([]string{name}, args...), " "))
	if m.noop {
		return nil
	}
	switch {
	case name == "apt-get" && args[0] == "install":
		if m.failInstalls > 0 {
			m.failInstalls--
			return errors.New("E: Unable to locate package")
		}
		for _, pkg := range args[3:] {
			for _, c := range hostCommands {
				if c.pkg == pkg {
					delete(m.missing, "cmd:"+c.name)
				}
			}
			for _, hd := range hostHeaders {
				if hd.pkg == pkg {
					write(m.t, filepath.Join(m.Root, hd.path), "")
				}
			}
			if pkg == "kmod" {
				delete(m.missing, "cmd:modprobe")
			}
		}
	case name == "modprobe" && args[0] == "overlay":
		write(m.t, filepath.Join(m.Root, "proc/filesystems"), "nodev\toverlay\n")
	case name == "modprobe" && args[0] == "br_netfilter":
		write(m.t, filepath.Join(m.Root, "proc/sys/net/bridge/bridge-nf-call-iptables"), "0\n")
	case name == "mount":
		write(m.t, filepath.Join(m.Root, "sys/fs/cgroup/cgroup.controllers"), "cpu memory pids\n")
	}
	return nil
}

func TestProvideHost(t *testing.T) {
	tests := []struct {
		name       string
		machine    func(t *testing.T) *machine
		bestEffort bool
		wantRan    []string
		wantOut    []string
		wantErr    string
	}{
		{name: "nothing missing: nothing done", machine: func(t *testing.T) *machine { return newMachine(t) },
			wantOut: []string{"nothing to do"}},
		{name: "a fresh Debian machine", machine: func(t *testing.T) *machine { return newMachine(t, freshDebian...) },
			wantRan: []string{"apt-get install -y --no-install-recommends iptables conntrack libseccomp-dev"},
			wantOut: []string{"installing Debian packages: iptables conntrack libseccomp-dev", "the host has everything the real node needs"}},
		{name: "stale package lists: update, then install again", machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:conntrack")
			m.failInstalls = 1
			return m
		}, wantRan: []string{"apt-get install -y --no-install-recommends conntrack", "apt-get update", "apt-get install -y --no-install-recommends conntrack"}},
		{name: "modules, modprobe and the cgroup mount", machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:modprobe", "proc/sys/net/bridge/bridge-nf-call-iptables", "sys/fs/cgroup/cpu/tasks", "sys/fs/cgroup/memory/tasks", "sys/fs/cgroup/pids/tasks")
			write(t, filepath.Join(m.Root, "proc/filesystems"), "nodev\tproc\n")
			return m
		}, wantRan: []string{"apt-get install -y --no-install-recommends kmod", "modprobe overlay", "modprobe br_netfilter", "mount -t cgroup2 none {root}/sys/fs/cgroup"},
			wantOut: []string{"loading kernel module overlay", "loading kernel module br_netfilter", "mounting the cgroup file system"}},
		{name: "not root: nothing run, the one command named", machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:conntrack")
			m.EUID = func() int { return 1000 }
			return m
		}, wantErr: "cannot prepare this host: missing conntrack: `sudo chartpilot cluster prepare-host` provides them (Debian packages conntrack), then run as root"},
		{name: "not root, best effort: said, no error", bestEffort: true, machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:conntrack")
			m.EUID = func() int { return 1000 }
			return m
		}, wantOut: []string{"uses a kwok node: cannot prepare this host: missing conntrack: `sudo chartpilot cluster prepare-host`"}},
		{name: "no apt-get", machine: func(t *testing.T) *machine { return newMachine(t, "cmd:apt-get", "cmd:iptables") },
			wantErr: "no apt-get: missing iptables: install the Debian packages iptables (or your system's equivalents)"},
		{name: "another Kubernetes's kubelet: installed, and named", machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:conntrack")
			withAgent(t, m.Host, "4242", "kubelet", false)
			return m
		}, wantRan: []string{"apt-get install -y --no-install-recommends conntrack"},
			wantErr: "another kubelet runs on this host (pid 4242"},
		{name: "an install that provides nothing", machine: func(t *testing.T) *machine {
			m := newMachine(t, "cmd:conntrack")
			m.noop = true
			return m
		}, wantRan: []string{"apt-get install -y --no-install-recommends conntrack"},
			wantErr: "missing conntrack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.machine(t)
			var out strings.Builder
			err := ProvideHost(context.Background(), ProvideOptions{Out: &out, BestEffort: tt.bestEffort, Host: m.Host, Run: m.run})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("ProvideHost() = %v, want an error containing %q", err, tt.wantErr)
			}
			want := make([]string, len(tt.wantRan))
			for i, r := range tt.wantRan {
				want[i] = strings.ReplaceAll(r, "{root}", m.Root)
			}
			if !slices.Equal(m.ran, want) {
				t.Errorf("ran %q, want %q", m.ran, want)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
