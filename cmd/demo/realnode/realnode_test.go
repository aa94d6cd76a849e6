package realnode_test

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
	"github.com/chartpilot/chartpilot/cmd/demo"
	"github.com/chartpilot/chartpilot/internal/testbin"
)

// The journey through images on a real node: the operator, bundle and
// catalog images go through the local registry, OLM unpacks the bundle
// image and runs the catalog image and the operator's image as pods. Then
// OLM v1 in the same cluster installs the same images through a
// ClusterCatalog and a ClusterExtension whose installer has the RBAC
// derived from the bundle, upgrades them in place and uninstalls them
// leaving nothing.
func TestJourneyThroughImages(t *testing.T) {
	clustertest.SkipIfShort(t)
	// Both, static, as make build makes them: image build packs the
	// chartpilot-operator next to chartpilot.
	bin := testbin.Chartpilot(t)
	testbin.Operator(t)
	clustertest.RequireRealNode(t)
	var out strings.Builder
	dir := t.TempDir()
	sum, err := demo.Run(context.Background(), demo.Options{Dir: dir, Binary: bin, Node: cluster.NodeReal, OLM: cluster.OLMBoth, Out: &out, Timeout: 3 * time.Minute})
	t.Log("\n" + out.String())
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "cluster", "kubelet.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			t.Logf("%s, last lines:\n%s", l, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
		t.Fatal(err)
	}
	for _, want := range []string{"the journey goes through images", "make docker-build", "make docker-push", "The operator runs in its pod, from the image built", "operand pods Ready"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the journey does not say %q", want)
		}
	}
	// Pods run here: the scorecard proves backup and restore of the
	// hello volume too, and v0.2.0 reaches Full Lifecycle.
	if got, want := sum.Capabilities, map[string]string{"0.1.0": "Basic Install", "0.2.0": "Full Lifecycle"}; !maps.Equal(got, want) {
		t.Errorf("capability levels %v, want %v", got, want)
	}
	if !slices.Equal(sum.Revisions, []int64{1, 2}) {
		t.Errorf("release revisions %v, want [1 2]", sum.Revisions)
	}
	if !slices.Equal(sum.Kept, []string{"ConfigMap", "Service", "Deployment"}) {
		t.Errorf("objects the upgrade kept (same UIDs): %v", sum.Kept)
	}
	assertOLMv1(t, sum, out.String())
}

// assertOLMv1 checks OLM v1's part of the journey: installed, the release
// upgraded in place to revision 2, nothing left after uninstall.
func assertOLMv1(t *testing.T, sum *demo.Summary, out string) {
	t.Helper()
	v1 := sum.OLMv1
	for _, m := range v1.Missing() {
		t.Errorf("OLM v1: %s", m)
	}
	if v1 == nil {
		t.FailNow()
	}
	for _, want := range []string{"chartpilot olm v1 install", "ClusterExtension hello-operator Installed", "derived from the bundle", "chartpilot olm v1 upgrade", "chartpilot olm v1 uninstall"} {
		if !strings.Contains(out, want) {
			t.Errorf("the journey does not say %q", want)
		}
	}
	t.Logf("OLM v1: ClusterExtension created to Installed %s, publish of v0.2.0 to release upgraded %s, its steps %s of %s",
		v1.ExtensionToInstalled, v1.PublishToUpgraded, v1.Duration, sum.Total)
}
