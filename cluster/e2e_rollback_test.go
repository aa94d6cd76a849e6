package cluster_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
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
	trap := clustertest.NewPortTrap(t, cluster.Kwok)
	c, err := cluster.New(cluster.Options{StateDir: dir, CacheDir: filepath.Dir(filepath.Dir(env.Tools.BinDir)),
		StartTimeout: 30 * time.Second, WithoutOLM: true, Out: testWriter{t}, BeforeStart: trap.BeforeStart})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })

	kwokPort := func() int { return c.Ports().Kwok }
	upFailsAtKwok := func(t *testing.T) {
		t.Helper()
		trap.Arm(kwokPort)
		defer trap.Free()
		err := c.Up(ctx)
		var inUse *cluster.PortInUseError
		if !errors.As(err, &inUse) || inUse.Component != cluster.Kwok {
			t.Fatalf("Up = %v, want a PortInUseError for kwok", err)
		}
		if first, _, _ := strings.Cut(err.Error(), "\n"); !strings.HasPrefix(first, "kwok cannot start") {
			t.Errorf("the error's first line %q is not its cause", first)
		}
		t.Logf("the failed start stopped what it started in %s", time.Since(trap.Took()).Round(10*time.Millisecond))
	}

	t.Run("fresh cluster", func(t *testing.T) {
		upFailsAtKwok(t)
		for _, s := range c.Status(ctx) {
			if s.Running {
				t.Errorf("%s (pid %d) left running after the failed start", s.Name, s.PID)
			}
		}
		if pids := clustertest.ProcessesOf(dir); len(pids) > 0 {
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
			return !slices.Contains(clustertest.ProcessesOf(dir), before[cluster.Kwok]), nil
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
