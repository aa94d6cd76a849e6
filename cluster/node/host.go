package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/flock"
	"github.com/chartpilot/chartpilot/internal/netns"
)

// UnavailableError says why this host cannot run a real node, in one line.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "no real node on this host: " + e.Reason }

// Host is what Preflight looks at; the zero value is this machine.
type Host struct {
	// Root is the file system root to read /proc and /sys under ("" is /).
	Root string
	// LookPath finds a command; nil is exec.LookPath.
	LookPath func(string) (string, error)
	// EUID is the effective user; nil is os.Geteuid.
	EUID func() int
	// GOOS is the operating system; "" is runtime.GOOS.
	GOOS string
}

// Preflight says whether this host can run a real node: Linux, root, the
// cgroup controllers, overlayfs, bridge netfilter, the commands the agents
// run, what building runc takes, and no kubelet, kube-proxy or containerd of
// another Kubernetes on the host. The error names everything missing at
// once, in one line, and the one command that provides what can be
// installed (see Missing and Explain).
func (h Host) Preflight() error {
	h = h.defaults()
	needs := h.Missing()
	if len(needs) == 0 {
		return nil
	}
	_, err := h.LookPath("apt-get")
	return &UnavailableError{Reason: Explain(needs, err == nil)}
}

// agents are the programs of a Kubernetes node. One of them running outside
// the node's network namespace belongs to another Kubernetes on this host
// (the host may be a node itself): the real node would share the kernel's
// netfilter and cgroups with it, so it refuses rather than risk either.
var agents = []string{"kubelet", "kube-proxy", "containerd"}

// agentSockets are where another containerd (Docker's included) serves.
var agentSockets = []string{"run/containerd/containerd.sock", "var/run/containerd/containerd.sock"}

// foreignAgents are the agents of another Kubernetes that run here.
func (h Host) foreignAgents() []Need {
	const useKwok = "the real node does not share a host with another Kubernetes node's agents (use the kwok node)"
	var needs []Need
	ours := h.path(strings.TrimPrefix(NetNSPath(), "/"))
	entries, _ := os.ReadDir(h.path("proc"))
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, err := os.ReadFile(h.path(filepath.Join("proc", e.Name(), "comm")))
		if err != nil || !slices.Contains(agents, strings.TrimSpace(string(comm))) {
			continue
		}
		if netns.Same(h.path(filepath.Join("proc", e.Name(), "ns", "net")), ours) {
			continue
		}
		exe, _ := os.Readlink(h.path(filepath.Join("proc", e.Name(), "exe")))
		needs = append(needs, Need{Reason: fmt.Sprintf("another %s runs on this host (pid %s, %s): %s", strings.TrimSpace(string(comm)), e.Name(), exe, useKwok)})
	}
	for _, sock := range agentSockets {
		if dialable(h.path(sock)) {
			needs = append(needs, Need{Reason: fmt.Sprintf("another containerd serves /%s: the real node does not share a host with another container runtime (use the kwok node)", sock)})
		}
	}
	return needs
}

// dialable reports whether a unix socket at path accepts connections (a
// socket file left by a runtime that stopped does not).
func dialable(path string) bool {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func (h Host) defaults() Host {
	if h.Root == "" {
		h.Root = "/"
	}
	if h.LookPath == nil {
		h.LookPath = exec.LookPath
	}
	if h.EUID == nil {
		h.EUID = os.Geteuid
	}
	if h.GOOS == "" {
		h.GOOS = runtime.GOOS
	}
	return h
}

func (h Host) path(rel string) string { return filepath.Join(h.Root, rel) }

// hasController is true for a cgroup v1 hierarchy of that controller, or a
// cgroup v2 root that enables it.
func (h Host) hasController(name string) bool {
	if data, err := os.ReadFile(h.path("sys/fs/cgroup/cgroup.controllers")); err == nil && hasField(string(data), name) {
		return true
	}
	_, err := os.Stat(h.path("sys/fs/cgroup/" + name + "/tasks"))
	return err == nil
}

func hasField(text, field string) bool {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if slices.Contains(strings.Fields(sc.Text()), field) {
			return true
		}
	}
	return false
}

// Prepare sets up what the agents expect of the host: mounts that
// propagate (the kubelet's volume mounts must reach containerd's
// containers), the node's cgroup root, and the node's network namespace
// with its link to the host, forwarding and bridge netfilter (Service
// traffic between pods of one bridge) and the pod bridge. It touches no
// network setting of the host's own namespace besides HostLink and the
// route through it. It is harmless to repeat.
func Prepare() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making / a shared mount: %w", err)
	}
	if err := ensureCgroupRoot(); err != nil {
		return err
	}
	if err := ensureNetNS(); err != nil {
		return err
	}
	if err := ensureLink(); err != nil {
		return err
	}
	err := netns.Do(NetNSPath(), func() error {
		for _, key := range []string{"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"} {
			if err := os.WriteFile("/proc/sys/"+key, []byte("1"), 0o644); err != nil {
				return fmt.Errorf("setting %s in the node's network namespace: %w", strings.ReplaceAll(key, "/", "."), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ensureBridge()
}

// cgroupFS is where the cgroup hierarchies are mounted.
const cgroupFS = "/sys/fs/cgroup"

// ensureCgroupRoot creates CgroupRoot in every cgroup hierarchy: the
// kubelet refuses a cgroup root that does not exist. A new cpuset cgroup
// gets its parent's CPUs and memory nodes, or no process could join it.
func ensureCgroupRoot() error {
	for _, dir := range cgroupRootDirs() {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating the node's cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			cur, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || strings.TrimSpace(string(cur)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("setting %s of %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// cgroupRootDirs are CgroupRoot's directories: one in a cgroup v2 host's
// single hierarchy, else one in each cgroup v1 hierarchy (and the unified
// one beside them).
func cgroupRootDirs() []string {
	if exists(filepath.Join(cgroupFS, "cgroup.controllers")) {
		return []string{cgroupFS + CgroupRoot}
	}
	entries, _ := os.ReadDir(cgroupFS)
	var dirs []string
	for _, e := range entries {
		h := filepath.Join(cgroupFS, e.Name())
		// Links name co-mounted controllers (cpu -> cpu,cpuacct): one
		// hierarchy, once.
		if e.Type()&os.ModeSymlink != 0 || !exists(filepath.Join(h, "cgroup.procs")) {
			continue
		}
		dirs = append(dirs, h+CgroupRoot)
	}
	return dirs
}

// ensureNetNS creates the node's network namespace unless it exists.
func ensureNetNS() error {
	if exists(NetNSPath()) {
		return nil
	}
	return ip("netns", "add", NetNS)
}

// ensureLink links the host and the node's namespace: a veth pair with an
// address at either end, the node's default route through the host, and
// the host's route to the pod network through the node.
func ensureLink() error {
	if !exists("/sys/class/net/" + HostLink) {
		if err := ip("link", "add", HostLink, "type", "veth", "peer", "name", nodeLink, "netns", NetNS); err != nil {
			return err
		}
	}
	if err := checkPodRoutes(); err != nil {
		return err
	}
	steps := [][]string{
		{"addr", "replace", HostIP + linkPrefix, "dev", HostLink},
		{"link", "set", HostLink, "up"},
		{"-n", NetNS, "link", "set", "lo", "up"},
		{"-n", NetNS, "addr", "replace", NodeIP + linkPrefix, "dev", nodeLink},
		{"-n", NetNS, "link", "set", nodeLink, "up"},
		{"-n", NetNS, "route", "replace", "default", "via", HostIP},
		{"route", "replace", PodCIDR, "via", NodeIP, "dev", HostLink},
	}
	for _, args := range steps {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// ensureBridge creates the pod bridge in the node's namespace with the pod
// network's gateway address (the CNI bridge plugin would create it too, at
// the first pod; kube-proxy's node ports want it from the start).
func ensureBridge() error {
	if err := ip("-n", NetNS, "link", "show", Bridge); err != nil {
		if err := ip("-n", NetNS, "link", "add", Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	if err := ip("-n", NetNS, "addr", "replace", PodGateway+"/16", "dev", Bridge); err != nil {
		return err
	}
	return ip("-n", NetNS, "link", "set", Bridge, "up")
}

func ip(args ...string) error {
	cmd, err := systemCommand(context.Background(), "ip", args)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// claimFile says which node directory owns this machine's bridge, rules and
// kernel settings: there is one real node per machine.
const claimFile = "/run/chartpilot/real-node"

// Claim makes dir's node the machine's real node. Another node directory's
// claim stands while runs says that node's cluster still runs (or is being
// started or stopped). A claim whose cluster no longer runs (killed, or a
// machine restored from a disk image) is taken over: Claim returns that
// node directory, so that the caller removes what the node left behind.
func Claim(dir string, runs func(owner string) bool) (stale string, err error) {
	return claim(claimFile, dir, runs)
}

func claim(file, dir string, runs func(owner string) bool) (stale string, err error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", err
	}
	// Two clusters starting at once read and write the claim one at a time.
	unlock, err := flock.Lock(context.Background(), file+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if data, err := os.ReadFile(file); err == nil {
		if owner := string(data); owner != dir && owner != "" {
			if runs(owner) {
				return "", &UnavailableError{Reason: fmt.Sprintf("the real node of the cluster in %s runs on this machine (one per machine; stop it with `chartpilot cluster down --state-dir %s`)",
					filepath.Dir(owner), filepath.Dir(owner))}
			}
			stale = owner
		}
	}
	return stale, atomicfile.WriteFile(file, []byte(dir), 0o644)
}

// Claimant is the node directory holding the machine's claim; "" when
// none does.
func Claimant() string {
	data, _ := os.ReadFile(claimFile)
	return string(data)
}

// ClaimedByOther reports whether another node directory holds the
// machine's claim: dir's node was taken over, and what is on the host now
// is that node's.
func ClaimedByOther(dir string) bool { return claimedByOther(claimFile, dir) }

func claimedByOther(file, dir string) bool {
	data, err := os.ReadFile(file)
	return err == nil && len(data) > 0 && string(data) != dir
}

// Release gives up dir's claim on the machine.
func Release(dir string) { release(claimFile, dir) }

func release(file, dir string) {
	if data, err := os.ReadFile(file); err == nil && string(data) == dir {
		_ = os.Remove(file)
	}
}
