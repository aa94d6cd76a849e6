package realnode_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/node"
)

// A failed start on a real node undoes the host's setup too once nothing
// of the cluster runs: containerd, the kubelet and kube-proxy were started
// and stopped, and neither the node's network namespace, its link, its
// cgroups nor the machine's claim on the real node is left, so that
// another cluster's real node can start; the same state directory starts
// again, taking over the claim a cluster that no longer runs left. Killed
// outright with its pods running, it is taken over by another cluster,
// whose node its own down then leaves alone. Through all of it, what a
// Kubernetes of the host itself has (decoys: a process in /kubepods, a
// KUBE-SERVICES chain, a cni0 bridge) stays as it was.
func TestFailedUpUndoesTheRealNode(t *testing.T) {
	clustertest.RequireRealNode(t)
	decoys := clustertest.PlantDecoys(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	trap := clustertest.NewPortTrap(t, cluster.CSIProvisioner)
	c, err := cluster.New(cluster.Options{StateDir: dir, Node: cluster.NodeReal, WithoutOLM: true,
		StartTimeout: 3 * time.Minute, Out: logWriter{t}, BeforeStart: trap.BeforeStart})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })

	// The CSI provisioner starts after containerd, the kubelet and
	// kube-proxy (whose own ports are in the node's network namespace).
	trap.Arm(func() int { return c.Ports().CSI.Provisioner })
	err = c.Up(ctx)
	trap.Free()
	var inUse *cluster.PortInUseError
	if !errors.As(err, &inUse) || inUse.Component != cluster.CSIProvisioner {
		t.Fatalf("Up = %v, want a PortInUseError for %s", err, cluster.CSIProvisioner)
	}
	decoys.Check(t, "a failed start")
	t.Logf("the failed start stopped what it started and cleaned the host in %s", time.Since(trap.Took()).Round(10*time.Millisecond))
	if pids := clustertest.ProcessesOf(dir); len(pids) > 0 {
		t.Errorf("processes of the cluster left running: %v", pids)
	}
	for _, p := range []string{"/sys/class/net/" + node.HostLink, node.NetNSPath()} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left after the failed start", p)
		}
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir+"/") {
		t.Errorf("mounts under %s left after the failed start", dir)
	}
	other := filepath.Join(t.TempDir(), "other", "node")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	// Any claim left would count as a running node's here.
	if _, err := node.Claim(other, func(string) bool { return true }); err != nil {
		t.Errorf("the failed start kept the machine's real node: %v", err)
	}
	// other's claim stays, as a killed cluster's would (a test run cut off,
	// a machine restored from a disk image): nothing of other runs, so the
	// next start takes the real node over.

	began := time.Now()
	if err := c.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	t.Logf("up again, taking the real node over, in %s", time.Since(began).Round(100*time.Millisecond))
	decoys.Check(t, "a takeover and up")
	for _, s := range c.Status(ctx) {
		if !s.Running || !s.Healthy {
			t.Errorf("%s: running %v, healthy %v: %s", s.Name, s.Running, s.Healthy, s.Error)
		}
	}

	// A takeover of a node whose pods still run: every component of c is
	// killed outright, and another cluster's start takes the node over.
	var killed []int
	for _, s := range c.Status(ctx) {
		if s.Running {
			_ = syscall.Kill(-s.PID, syscall.SIGKILL)
			killed = append(killed, s.PID)
		}
	}
	// Reaped by this process, their parent; the shims of c's pods live on.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range killed {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("components of the killed cluster left: %v", killed)
	}
	if len(nodePodProcesses()) == 0 {
		t.Fatal("the killed cluster left no pod running: the takeover would have nothing to remove")
	}
	var out bytes.Buffer
	d, err := cluster.New(cluster.Options{StateDir: filepath.Join(t.TempDir(), "d"), Node: cluster.NodeReal, WithoutOLM: true,
		StartTimeout: 3 * time.Minute, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Down(context.Background(), cluster.DownOptions{Wipe: true}) })
	began = time.Now()
	if err := d.Up(ctx); err != nil {
		t.Fatalf("another cluster's up: %v\n%s", err, out.String())
	}
	t.Logf("another cluster up, taking over a killed node with running pods, in %s", time.Since(began).Round(100*time.Millisecond))
	if !strings.Contains(out.String(), "taken over from the cluster in "+dir) {
		t.Errorf("the takeover is not reported:\n%s", out.String())
	}
	decoys.Check(t, "taking over a killed node")

	// The down of the cluster whose node was taken over leaves the node,
	// now the other cluster's, alone.
	if err := c.Down(ctx, cluster.DownOptions{}); err != nil && !errors.Is(err, cluster.ErrNotRunning) {
		t.Errorf("down of the cluster taken over: %v", err)
	}
	for _, s := range d.Status(ctx) {
		if !s.Running || !s.Healthy {
			t.Errorf("after the down of the cluster it took over, %s: running %v, healthy %v: %s", s.Name, s.Running, s.Healthy, s.Error)
		}
	}
	began = time.Now()
	if err := d.Down(ctx, cluster.DownOptions{Wipe: true}); err != nil {
		t.Errorf("down: %v", err)
	}
	t.Logf("down --wipe in %s", time.Since(began).Round(100*time.Millisecond))
	decoys.Check(t, "down")
	if pids := nodePodProcesses(); len(pids) > 0 {
		t.Errorf("pod processes left after down: %v", pids)
	}
}

// nodePodProcesses lists the processes in the real node's cgroups.
func nodePodProcesses() []int {
	return clustertest.Processes(func(proc string) bool {
		cg, err := os.ReadFile(filepath.Join(proc, "cgroup"))
		return err == nil && strings.Contains(string(cg), ":"+node.CgroupRoot+"/")
	})
}

// logWriter writes a cluster's progress to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
