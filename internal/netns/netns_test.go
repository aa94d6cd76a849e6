package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A process started in Do runs in the namespace, and the caller's thread
// is back in its own afterwards.
func TestDoStartsProcessesInTheNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root: creating a network namespace needs it")
		}
		t.Skip("creating a network namespace needs root (under CI=true this fails)")
	}
	name := fmt.Sprintf("chartpilot-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	path := filepath.Join("/run/netns", name)

	var links []byte
	var pid int
	err := Do(path, func() error {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			return err
		}
		pid = cmd.Process.Pid
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		var err error
		links, err = exec.Command("ip", "-o", "link").Output()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !Same(fmt.Sprintf("/proc/%d/ns/net", pid), path) {
		t.Errorf("the process started in Do is not in %s", name)
	}
	if Same("/proc/self/ns/net", path) {
		t.Errorf("this process stayed in %s", name)
	}
	// A new namespace has only its loopback device.
	if got := strings.Count(strings.TrimSpace(string(links)), "\n") + 1; got != 1 || !strings.Contains(string(links), "lo:") {
		t.Errorf("links seen in the namespace:\n%s", links)
	}
	if err := Do(filepath.Join(t.TempDir(), "none"), func() error { return nil }); err == nil || !strings.Contains(err.Error(), "none") {
		t.Errorf("Do of a missing namespace = %v", err)
	}
}
