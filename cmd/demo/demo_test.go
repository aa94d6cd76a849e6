package demo

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/testbin"
)

var env *clustertest.Env

func TestMain(m *testing.M) {
	os.Exit(clustertest.MainWith(m, &env, clustertest.Options{OLM: cluster.OLMBoth}))
}

// The whole journey, as `make demo` runs it on a kwok node, on the test
// binary's cluster: through OLM v0, then through OLM v1.
func TestJourney(t *testing.T) {
	clustertest.SkipIfShort(t)
	bin := testbin.Chartpilot(t)
	var out strings.Builder
	dir := t.TempDir()
	sum, err := Run(context.Background(), Options{
		Dir: dir, Binary: bin, Kubeconfig: env.Kubeconfig, OLM: cluster.OLMBoth, Out: &out, Timeout: 3 * time.Minute,
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
	if len(sum.Steps) != 20 {
		t.Fatalf("%d steps ran, want 20 (13 through OLM v0, 7 through OLM v1)", len(sum.Steps))
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
	checkOLMv1(t, sum)
}

// checkOLMv1 checks the journey through OLM v1: installed, saying why
// without an installer, the release upgraded in place to revision 2,
// nothing left after uninstall.
func checkOLMv1(t *testing.T, sum *Summary) {
	t.Helper()
	v1 := sum.OLMv1
	for _, m := range v1.Missing() {
		t.Errorf("OLM v1: %s", m)
	}
	if v1 == nil {
		t.FailNow()
	}
	installed := slices.IndexFunc(sum.Steps, func(s Step) bool { return strings.Contains(s.Title, "olm v1 install") })
	// The local cluster's OLM v1 (v1.11) installs as its own ServiceAccount.
	if installed < 0 || !strings.Contains(sum.Steps[installed].Detail, "installer none: ") {
		t.Errorf("the install step does not say why there is no installer: %+v", sum.Steps)
	}
	t.Logf("OLM v1: ClusterExtension created to Installed %s, publish of v0.2.0 to release upgraded %s, its steps %s of %s",
		v1.ExtensionToInstalled, v1.PublishToUpgraded, v1.Duration, sum.Total)
}
