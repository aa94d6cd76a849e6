package cluster_test

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/cluster/process"
)

// A cluster with OLM v1 alone runs catalogd and operator-controller on
// the host beside the shared cluster (OLM v1 listens on ports of its own),
// passes Check (catalogd's webhook labels a ClusterCatalog, both reconcile),
// and an Up without OLM stops them.
func TestOLMv1OnTheHost(t *testing.T) {
	clustertest.SkipIfShort(t)
	opts := cluster.Options{
		StateDir: filepath.Join(t.TempDir(), "state"),
		CacheDir: filepath.Dir(filepath.Dir(env.Tools.BinDir)),
		OLM:      cluster.OLMv1,
		Out:      testWriter{t},
	}
	c, err := cluster.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background(), cluster.DownOptions{Wipe: true}) })
	began := time.Now()
	if err := c.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("a cluster with OLM v1 up in %s", time.Since(began).Round(10*time.Millisecond))
	running := map[string]bool{}
	for _, s := range c.Status(t.Context()) {
		running[s.Name] = s.Running && s.Healthy
	}
	if !running[cluster.Catalogd] || !running[cluster.OperatorController] || running[cluster.OLM] || running[cluster.Catalog] {
		t.Fatalf("components: %v, want catalogd and operator-controller without OLM v0's", running)
	}
	if _, err := c.Check(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}

	// The same cluster again, without OLM: OLM v1's processes stop.
	opts.WithoutOLM = true
	c, err = cluster.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Status(t.Context()) {
		if s.Name == cluster.Catalogd || s.Name == cluster.OperatorController {
			t.Errorf("%s is part of a cluster without OLM", s.Name)
		}
	}
	for _, name := range []string{cluster.Catalogd, cluster.OperatorController} {
		if pid, ok := process.Find(filepath.Join(c.StateDir(), "run", name+".pid")); ok {
			t.Errorf("%s (pid %d) still runs after an up without OLM", name, pid)
		}
	}
}
