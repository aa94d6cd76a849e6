package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
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

// A start that fails half way stops the components it started, last first,
// and only those: a cluster's processes that ran before it stay, none of
// the ones it started is left, and once the cause is gone the same state
// directory starts. The cause is a port taken as the last component (kwok)
// is about to start, past Up's check of every port.
func TestFailedUpStopsWhatItStarted(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	c, err := cluster.New(cluster.Options{StateDir: dir, CacheDir: filepath.Dir(filepath.Dir(env.Tools.BinDir)),
		StartTimeout: 30 * time.Second, WithoutOLM: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })

	kwokPort := func() int { return c.Ports().Kwok }
	upFailsAtKwok := func(t *testing.T) {
		t.Helper()
		took, free := takePortAtStart(t, c, cluster.Kwok, kwokPort)
		defer free()
		err := c.Up(ctx)
		var inUse *cluster.PortInUseError
		if !errors.As(err, &inUse) || inUse.Component != cluster.Kwok {
			t.Fatalf("Up = %v, want a PortInUseError for kwok", err)
		}
		if first, _, _ := strings.Cut(err.Error(), "\n"); !strings.HasPrefix(first, "kwok cannot start") {
			t.Errorf("the error's first line %q is not its cause", first)
		}
		t.Logf("the failed start stopped what it started in %s", time.Since(*took).Round(10*time.Millisecond))
	}

	t.Run("fresh cluster", func(t *testing.T) {
		upFailsAtKwok(t)
		for _, s := range c.Status(ctx) {
			if s.Running {
				t.Errorf("%s (pid %d) left running after the failed start", s.Name, s.PID)
			}
		}
		if pids := processesOf(dir); len(pids) > 0 {
			t.Errorf("processes of the cluster left running: %v", pids)
		}
	})
	t.Run("up again once the port is free", func(t *testing.T) {
		if err := c.Up(ctx); err != nil {
			t.Fatal(err)
		}
		for _, s := range c.Status(ctx) {
			if !s.Running || !s.Healthy {
				t.Errorf("%s: running %v, healthy %v: %s", s.Name, s.Running, s.Healthy, s.Error)
			}
		}
	})
	t.Run("components running before stay", func(t *testing.T) {
		before := map[string]int{}
		for _, s := range c.Status(ctx) {
			before[s.Name] = s.PID
		}
		// kwok dies; the next Up starts it again, and fails at it.
		if err := syscall.Kill(-before[cluster.Kwok], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return !slices.Contains(processesOf(dir), before[cluster.Kwok]), nil
		}); err != nil {
			t.Fatalf("kwok (pid %d) did not exit", before[cluster.Kwok])
		}
		upFailsAtKwok(t)
		for _, s := range c.Status(ctx) {
			switch {
			case s.Name == cluster.Kwok && s.Running:
				t.Errorf("kwok running after the failed start")
			case s.Name != cluster.Kwok && s.PID != before[s.Name]:
				t.Errorf("%s: pid %d, then %d (running %v): the failed start touched it", s.Name, before[s.Name], s.PID, s.Running)
			}
		}
	})
}

// takePortAtStart takes port() as Up is about to start component, past
// Up's check of every port, so that the component cannot start. took is
// when; free gives the port back and lets Up be.
func takePortAtStart(t *testing.T, c *cluster.Cluster, component string, port func() int) (took *time.Time, free func()) {
	var l net.Listener
	took = new(time.Time)
	cluster.SetBeforeStart(c, func(name string) {
		if name != component {
			return
		}
		var err error
		if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port()))); err != nil {
			t.Errorf("taking %s's port: %v", component, err)
		}
		*took = time.Now()
	})
	return took, func() {
		cluster.SetBeforeStart(c, nil)
		if l != nil {
			l.Close()
		}
	}
}

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
	c, err := cluster.New(cluster.Options{StateDir: dir, Node: cluster.NodeReal, WithoutOLM: true,
		StartTimeout: 3 * time.Minute, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })

	// The CSI provisioner starts after containerd, the kubelet and
	// kube-proxy (whose own ports are in the node's network namespace).
	took, free := takePortAtStart(t, c, cluster.CSIProvisioner, func() int { return c.Ports().CSI.Provisioner })
	err = c.Up(ctx)
	free()
	var inUse *cluster.PortInUseError
	if !errors.As(err, &inUse) || inUse.Component != cluster.CSIProvisioner {
		t.Fatalf("Up = %v, want a PortInUseError for %s", err, cluster.CSIProvisioner)
	}
	decoys.Check(t, "a failed start")
	t.Logf("the failed start stopped what it started and cleaned the host in %s", time.Since(*took).Round(10*time.Millisecond))
	if pids := processesOf(dir); len(pids) > 0 {
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
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && strings.Contains(string(cg), ":"+node.CgroupRoot+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processesOf lists the live processes whose command line names dir, as
// every component's does (its data, certificates or kubeconfig).
func processesOf(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		if stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(stat), ") Z") {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
