package node

import (
	"os"
	"slices"
	"strings"
)

// PrepareHostCommand is the command that installs and loads what a real
// node needs of a Debian host (see ProvideHost).
const PrepareHostCommand = "chartpilot cluster prepare-host"

// Need is one thing the host lacks for a real node, and what provides it:
// a Debian package, a kernel module, the cgroup file system's mount, or
// nothing here (Reason then says why, and what to do).
type Need struct {
	// What is missing, as the user knows it: a command, headers, a module.
	What string
	// Package is the Debian package that installs What.
	Package string
	// Module is the kernel module that provides What.
	Module string
	// Mount: mounting the cgroup file system provides What.
	Mount bool
	// Root: What is root itself (only running as root provides it).
	Root bool
	// Reason says why, for what no package, module or mount provides.
	Reason string
}

// provided says whether ProvideHost provides n.
func (n Need) provided() bool { return n.Package != "" || n.Module != "" || n.Mount }

// hostCommands are the host programs the node's agents run (kube-proxy and
// the kubelet program iptables, CNI's bridge uses iptables too, the node's
// setup runs ip and mount) and what building runc with seccomp runs.
var hostCommands = []struct{ name, pkg string }{
	{"iptables", "iptables"},
	{"iptables-save", "iptables"},
	{"iptables-restore", "iptables"},
	{"ip", "iproute2"},
	{"mount", "mount"},
	{"conntrack", "conntrack"},
	{"gcc", "gcc"},
	{"pkg-config", "pkg-config"},
}

// hostHeaders are the C headers building runc with seccomp (cgo) includes.
var hostHeaders = []struct{ what, path, pkg string }{
	{"the C library's headers", "usr/include/stdio.h", "libc6-dev"},
	{"libseccomp's headers", "usr/include/seccomp.h", "libseccomp-dev"},
}

// Missing is everything this host lacks for a real node, all at once (on
// another system than Linux, only that).
func (h Host) Missing() []Need {
	h = h.defaults()
	if h.GOOS != "linux" {
		return []Need{{What: "Linux", Reason: "containers need Linux (this is " + h.GOOS + ")"}}
	}
	var needs []Need
	if h.EUID() != 0 {
		needs = append(needs, Need{What: "root", Root: true, Reason: "containerd and the kubelet need root"})
	}
	needs = append(needs, h.missingCgroups()...)
	if fs, err := os.ReadFile(h.path("proc/filesystems")); err != nil || !hasField(string(fs), "overlay") {
		needs = append(needs, Need{What: "the overlay file system", Module: "overlay"})
	}
	if _, err := os.Stat(h.path("proc/sys/net/bridge/bridge-nf-call-iptables")); err != nil {
		needs = append(needs, Need{What: "bridge netfilter", Module: "br_netfilter"})
	}
	if slices.ContainsFunc(needs, func(n Need) bool { return n.Module != "" }) {
		if _, err := h.LookPath("modprobe"); err != nil {
			needs = append(needs, Need{What: "modprobe", Package: "kmod"})
		}
	}
	for _, c := range hostCommands {
		if _, err := h.LookPath(c.name); err != nil {
			needs = append(needs, Need{What: c.name, Package: c.pkg})
		}
	}
	for _, hd := range hostHeaders {
		if _, err := os.Stat(h.path(hd.path)); err != nil {
			needs = append(needs, Need{What: hd.what, Package: hd.pkg})
		}
	}
	return append(needs, h.foreignAgents()...)
}

// missingCgroups are the cgroup controllers the node needs that the host
// lacks: the file system's mount when none is mounted, else each
// controller the kernel does not offer.
func (h Host) missingCgroups() []Need {
	var missing []string
	for _, ctrl := range []string{"cpu", "memory", "pids"} {
		if !h.hasController(ctrl) {
			missing = append(missing, ctrl)
		}
	}
	if len(missing) == 3 && !exists(h.path("sys/fs/cgroup/cgroup.controllers")) {
		return []Need{{What: "the cgroup file system", Mount: true}}
	}
	var needs []Need
	for _, ctrl := range missing {
		needs = append(needs, Need{What: "the " + ctrl + " cgroup controller", Reason: "the " + ctrl + " cgroup controller is not available"})
	}
	return needs
}

// Explain says in one line what needs lacks: what nothing here provides,
// each with its reason, then what ProvideHost provides and the one command
// that does it (apt says whether Debian's apt-get is here; without it, the
// packages are named by their Debian names).
func Explain(needs []Need, apt bool) string {
	var reasons, provided []string
	root := false
	for _, n := range needs {
		switch {
		case n.Root:
			root = true
		case n.provided():
			provided = append(provided, n.What)
		default:
			reasons = append(reasons, n.Reason)
		}
	}
	if root && len(provided) == 0 {
		reasons = append([]string{"containerd and the kubelet need root (run as root, or use the kwok node)"}, reasons...)
	}
	parts := reasons
	if len(provided) > 0 {
		p := provisions(needs)
		parts = append(parts, "missing "+list(provided)+": "+fix(root, apt, p))
	}
	return strings.Join(parts, "; ")
}

// provision is what provides needs: Debian packages, kernel modules and
// whether to mount the cgroup file system.
type provision struct {
	packages, modules []string
	mount             bool
}

func provisions(needs []Need) provision {
	var p provision
	for _, n := range needs {
		if n.Package != "" && !slices.Contains(p.packages, n.Package) {
			p.packages = append(p.packages, n.Package)
		}
		if n.Module != "" && !slices.Contains(p.modules, n.Module) {
			p.modules = append(p.modules, n.Module)
		}
		p.mount = p.mount || n.Mount
	}
	return p
}

// what says what p installs, loads and mounts.
func (p provision) what() []string {
	var what []string
	if len(p.packages) > 0 {
		what = append(what, "Debian packages "+strings.Join(p.packages, " "))
	}
	if len(p.modules) > 0 {
		what = append(what, "kernel modules "+strings.Join(p.modules, " "))
	}
	if p.mount {
		what = append(what, "the cgroup file system's mount")
	}
	return what
}

// fix is the one command that provides what p names.
func fix(root, apt bool, p provision) string {
	then := ""
	if root {
		then = ", then run as root"
	}
	if !apt && len(p.packages) > 0 {
		return "install the " + strings.Join(p.what(), " and ") + " (or your system's equivalents)" + then
	}
	cmd := PrepareHostCommand
	if root {
		cmd = "sudo " + cmd
	}
	return "`" + cmd + "` provides them (" + strings.Join(p.what(), ", ") + ")" + then
}

// list joins items as "a, b and c".
func list(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
