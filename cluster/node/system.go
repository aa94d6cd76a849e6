package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// systemPath is where the host's tools are looked for: the system's own
// directories, not the caller's PATH, which as root could be anyone's.
var systemPath = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// systemCommand is a command of one of the host's tools (ip, modprobe,
// mount, apt-get) by its absolute path, with an environment of its own:
// the system PATH, the C locale (its output is parsed) and extra.
func systemCommand(ctx context.Context, name string, args []string, extra ...string) (*exec.Cmd, error) {
	path, err := systemTool(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append([]string{"PATH=" + strings.Join(systemPath, ":"), "LANG=C", "LC_ALL=C"}, extra...)
	// A proxy apt-get may need to reach Debian's packages: where to
	// connect, never which program runs.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); slices.Contains(proxyVars, strings.ToLower(k)) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd, nil
}

// proxyVars are the proxy settings passed on to the host's tools.
var proxyVars = []string{"http_proxy", "https_proxy", "no_proxy"}

// systemTool is the absolute path of a tool in the system directories.
func systemTool(name string) (string, error) {
	for _, dir := range systemPath {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w in %s", name, fs.ErrNotExist, strings.Join(systemPath, ", "))
}

// ErrPodNetworkTaken means the host routes the pod network elsewhere.
var ErrPodNetworkTaken = errors.New("the host already routes the pod network elsewhere")

// foreignPodRoutes are the host's routes within the pod network that do not
// go through the node's link: Podman's default network is 10.88.0.0/16 too.
func foreignPodRoutes(routes string) []string {
	var out []string
	for _, line := range strings.Split(routes, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.Contains(" "+line+" ", " dev "+HostLink+" ") {
			out = append(out, line)
		}
	}
	return out
}

// checkPodRoutes refuses to route the pod network through the node while
// the host routes any part of it elsewhere: replacing that route would take
// another network (Podman's) over, and nothing would put it back.
func checkPodRoutes() error {
	cmd, err := systemCommand(context.Background(), "ip", []string{"-o", "route", "show", "root", PodCIDR})
	if err != nil {
		return err
	}
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("ip route show root %s: %w", PodCIDR, err)
	}
	if foreign := foreignPodRoutes(string(out)); len(foreign) > 0 {
		return fmt.Errorf("%w: %s (the real node's pods use %s; Podman's default network does too: remove that network, or its route, and start again)",
			ErrPodNetworkTaken, strings.Join(foreign, "; "), PodCIDR)
	}
	return nil
}
