package node

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/flock"
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

// commands are the host programs the node's agents run: kube-proxy and the
// kubelet program iptables, CNI's bridge uses iptables too.
var commands = []struct{ name, pkg string }{
	{"iptables", "iptables"},
	{"iptables-save", "iptables"},
	{"iptables-restore", "iptables"},
	{"ip", "iproute2"},
	{"mount", "mount"},
	{"conntrack", "conntrack"},
}

// Preflight says whether this host can run a real node: Linux, root, the
// cgroup controllers, overlayfs, bridge netfilter and the commands the
// agents run. The error names the first thing missing and how to get it.
func (h Host) Preflight() error {
	h = h.defaults()
	switch {
	case h.GOOS != "linux":
		return &UnavailableError{Reason: "containers need Linux (this is " + h.GOOS + ")"}
	case h.EUID() != 0:
		return &UnavailableError{Reason: "containerd and the kubelet need root (run as root, or use the kwok node)"}
	}
	for _, ctrl := range []string{"cpu", "memory", "pids"} {
		if !h.hasController(ctrl) {
			return &UnavailableError{Reason: "the " + ctrl + " cgroup controller is not available"}
		}
	}
	if fs, err := os.ReadFile(h.path("proc/filesystems")); err != nil || !hasField(string(fs), "overlay") {
		return &UnavailableError{Reason: "the kernel has no overlay file system (containerd's snapshotter needs it)"}
	}
	if _, err := os.Stat(h.path("proc/sys/net/bridge/bridge-nf-call-iptables")); err != nil {
		return &UnavailableError{Reason: "bridge netfilter is not loaded (modprobe br_netfilter)"}
	}
	for _, c := range commands {
		if _, err := h.LookPath(c.name); err != nil {
			return &UnavailableError{Reason: fmt.Sprintf("%s is not installed (Debian package %s)", c.name, c.pkg)}
		}
	}
	return nil
}

// SeccompHeaders says whether runc can be built with seccomp support: it
// links libseccomp through cgo.
func (h Host) SeccompHeaders() error {
	h = h.defaults()
	if _, err := os.Stat(h.path("usr/include/seccomp.h")); err != nil {
		return &UnavailableError{Reason: "building runc needs libseccomp's headers (Debian package libseccomp-dev)"}
	}
	return nil
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

// Prepare sets up what the agents expect of the host: IP forwarding and
// bridge netfilter (Service traffic between pods of one bridge), mounts
// that propagate (the kubelet's volume mounts must reach containerd's
// containers), and the pod bridge with the node's address, so that the API
// server can listen there before any pod exists.
func Prepare() error {
	for key, value := range map[string]string{
		"net/ipv4/ip_forward":                 "1",
		"net/bridge/bridge-nf-call-iptables":  "1",
		"net/bridge/bridge-nf-call-ip6tables": "1",
	} {
		if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
			return fmt.Errorf("setting %s: %w", strings.ReplaceAll(key, "/", "."), err)
		}
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making / a shared mount: %w", err)
	}
	return ensureBridge()
}

func ensureBridge() error {
	if _, err := os.Stat("/sys/class/net/" + Bridge); errors.Is(err, os.ErrNotExist) {
		if err := ip("link", "add", Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	addrs, err := exec.Command("ip", "-o", "-4", "addr", "show", "dev", Bridge).Output()
	if err != nil {
		return fmt.Errorf("reading the addresses of %s: %w", Bridge, err)
	}
	if !strings.Contains(string(addrs), " "+NodeIP+"/") {
		if err := ip("addr", "add", NodeIP+"/16", "dev", Bridge); err != nil {
			return err
		}
	}
	return ip("link", "set", Bridge, "up")
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
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

// Release gives up dir's claim on the machine.
func Release(dir string) { release(claimFile, dir) }

func release(file, dir string) {
	if data, err := os.ReadFile(file); err == nil && string(data) == dir {
		_ = os.Remove(file)
	}
}
