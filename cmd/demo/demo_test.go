package demo

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

var env *clustertest.Env

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m, &env)) }

// The whole journey, as `make demo` runs it, on the test binary's cluster.
func TestJourney(t *testing.T) {
	clustertest.SkipIfShort(t)
	bin := filepath.Join(t.TempDir(), "chartpilot")
	build := exec.Command("go", "build", "-o", bin, "github.com/chartpilot/chartpilot/cmd/chartpilot")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building chartpilot: %v\n%s", err, out)
	}
	var out strings.Builder
	dir := t.TempDir()
	sum, err := Run(context.Background(), Options{
		Dir: dir, Binary: bin, Kubeconfig: env.Kubeconfig, Out: &out, Timeout: 3 * time.Minute,
		ClusterLogDir: filepath.Dir(env.Cluster.LogFile(cluster.OLM)),
	})
	t.Log("\n" + out.String())
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*operator*"))
		olmLogs, _ := filepath.Glob(filepath.Join(dir, "logs", "cluster", "olm.log"))
		for _, l := range append(logs, olmLogs...) {
			data, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, tail(string(data), 40))
		}
		t.Fatal(err)
	}
	if len(sum.Steps) != 13 {
		t.Fatalf("%d steps ran, want 13", len(sum.Steps))
	}
	if sum.SubscriptionToSucceeded <= 0 || sum.PublishToUpgraded <= 0 {
		t.Fatalf("timings missing: %+v", sum)
	}
	if !strings.Contains(out.String(), "the whole journey passed") {
		t.Fatal("the summary does not say the journey passed")
	}
	// The capability level climbs with the evidence.
	if got, want := sum.Capabilities, map[string]string{"0.1.0": "Basic Install", "0.2.0": "Seamless Upgrades"}; !maps.Equal(got, want) {
		t.Errorf("capability levels %v, want %v", got, want)
	}
	// Installed at revision 1, upgraded in place to revision 2.
	if !slices.Equal(sum.Revisions, []int64{1, 2}) {
		t.Errorf("release revisions %v, want [1 2]", sum.Revisions)
	}
	if !slices.Equal(sum.Kept, []string{"ConfigMap", "Service", "Deployment"}) {
		t.Errorf("objects the upgrade kept (same UIDs): %v, want the ConfigMap, Service and Deployment", sum.Kept)
	}
}
