package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cleanup removes what pods leave on the host once the kubelet and
// containerd are stopped: the containers' processes (shims outlive
// containerd by design), the mounts under the node's directory (volumes,
// snapshots, network namespaces), the pods' cgroups and the bridge. It is
// harmless to repeat.
func (c Config) Cleanup() error {
	var errs []error
	if err := c.killContainers(); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(c.Dir); err != nil {
		errs = append(errs, err)
	}
	removeCgroups()
	if err := removeKubeChains(); err != nil {
		errs = append(errs, err)
	}
	if _, err := os.Stat("/sys/class/net/" + Bridge); err == nil {
		if err := ip("link", "del", Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killContainers kills every process in the pods' cgroups and every shim
// started from this node's binaries, then waits for them to go.
func (c Config) killContainers() error {
	// The shim's /proc/PID/exe is the file the bin directory links to.
	shim := filepath.Join(c.BinDir, "containerd-shim-runc-v2")
	if real, err := filepath.EvalSymlinks(shim); err == nil {
		shim = real
	}
	var pids []int
	for _, pid := range allPIDs() {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if exe == shim || inKubepods(pid) {
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

// kubepods is the cgroup the kubelet puts pods under (cgroupfs driver).
const kubepods = "/kubepods"

func inKubepods(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == kubepods || strings.HasPrefix(parts[2], kubepods+"/")) {
			return true
		}
	}
	return false
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

// removeCgroups removes the kubelet's empty cgroups in every hierarchy,
// deepest first; a cgroup that still has a process stays.
func removeCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*" + kubepods)
	if v2 := "/sys/fs/cgroup" + kubepods; exists(v2) {
		roots = append(roots, v2)
	}
	for _, root := range roots {
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

// removeKubeChains removes the iptables chains the kubelet and kube-proxy
// made (KUBE-*) and the rules that jump to them from the built-in chains:
// what `kube-proxy --cleanup` leaves, such as the kubelet's KUBE-FIREWALL.
func removeKubeChains() error {
	var errs []error
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			return fmt.Errorf("reading iptables table %s: %w", table, err)
		}
		rules, chains := kubeRules(string(out))
		for _, rule := range rules {
			errs = append(errs, iptables(append([]string{"-t", table, "-D"}, rule...)...))
		}
		for _, verb := range []string{"-F", "-X"} {
			for _, chain := range chains {
				errs = append(errs, iptables("-t", table, verb, chain))
			}
		}
	}
	return errors.Join(errs...)
}

// kubeRules reads iptables-save output: the rules of built-in chains that
// jump to a KUBE- chain (as arguments of -D), and the KUBE- chains.
func kubeRules(save string) (rules [][]string, chains []string) {
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, ":KUBE-"):
			chains = append(chains, strings.Fields(line[1:])[0])
		case strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A KUBE-") && strings.Contains(line, " -j KUBE-"):
			args, err := splitRule(strings.TrimPrefix(line, "-A "))
			if err == nil {
				rules = append(rules, args)
			}
		}
	}
	return rules, chains
}

// splitRule splits an iptables-save rule into arguments, honouring the
// double quotes around comments.
func splitRule(rule string) ([]string, error) {
	var args []string
	var cur strings.Builder
	quoted, inArg := false, false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted, inArg = !quoted, true
		case r == ' ' && !quoted:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unbalanced quotes in %q", rule)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

func iptables(args ...string) error {
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
