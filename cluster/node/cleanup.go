package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chartpilot/chartpilot/internal/netns"
)

// Cleanup removes what the node leaves on the host once the kubelet and
// containerd are stopped: the containers' processes (shims outlive
// containerd by design), the mounts under the node's directory (volumes,
// snapshots, pods' network namespaces), the cgroups under CgroupRoot, and
// the node's network namespace with its link (the bridge, the pods' routes
// and every iptables rule of the node go with it). It touches nothing of
// the host's own: no /kubepods cgroup, no chain of the host's tables, no
// device but HostLink. It is harmless to repeat.
func (c Config) Cleanup() error {
	var errs []error
	if err := c.KillContainers(); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	removeCgroups()
	if err := removeNetwork(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// KillContainers kills every process in the node's cgroups or network
// namespace and every shim started from this node's binaries, then waits
// for them to go.
func (c Config) KillContainers() error {
	// The shim's /proc/PID/exe is the file the bin directory links to.
	shim := filepath.Join(c.BinDir, "containerd-shim-runc-v2")
	if real, err := filepath.EvalSymlinks(shim); err == nil {
		shim = real
	}
	var pids []int
	for _, pid := range allPIDs() {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if exe == shim || inCgroupRoot(pid) || netns.Same(fmt.Sprintf("/proc/%d/ns/net", pid), NetNSPath()) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("container process %d did not exit after SIGKILL", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inCgroupRoot reports whether pid is in a cgroup under CgroupRoot in any
// hierarchy.
func inCgroupRoot(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	return cgroupsUnder(string(data), CgroupRoot)
}

// cgroupsUnder reports whether a /proc/PID/cgroup text has a cgroup at or
// below root.
func cgroupsUnder(procCgroup, root string) bool {
	for _, line := range strings.Split(procCgroup, "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == root || strings.HasPrefix(parts[2], root+"/")) {
			return true
		}
	}
	return false
}

// removeNetwork deletes the node's network namespace and the host's end of
// its link (the node's end, and the host's route through it, go with it).
// An older chartpilot kept the pod bridge in the host's namespace: one
// left there is removed too.
func removeNetwork() error {
	var errs []error
	if exists("/sys/class/net/" + HostLink) {
		errs = append(errs, ip("link", "del", HostLink))
	}
	if exists(NetNSPath()) {
		errs = append(errs, ip("netns", "delete", NetNS))
	}
	if exists("/sys/class/net/" + Bridge) {
		errs = append(errs, ip("link", "del", Bridge))
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(unescape(fields[4]), prefix) {
			points = append(points, unescape(fields[4]))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescape undoes mountinfo's octal escapes of spaces and tabs.
func unescape(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// removeCgroups removes the node's empty cgroups in every hierarchy,
// deepest first, CgroupRoot last; a cgroup that still has a process stays.
func removeCgroups() {
	for _, root := range cgroupRootDirs() {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			_ = syscall.Rmdir(d)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
