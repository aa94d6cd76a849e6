package operator

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// Another controller keeps editing an object of the release: the operator
// repairs it up to the limit, then reports it and leaves it alone, costing
// no request while nothing changes; an annotation on the CR resumes repair.
func TestDriftRepairStopsFighting(t *testing.T) {
	clustertest.SkipIfShort(t)
	var requests atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} }
	startOperator(t, func(o *Options, _ *watches.Watch) {
		o.Config = cfg
		o.DriftLimit = reconciler.DriftLimit{Repairs: 2, Window: time.Minute}
	})
	e := newEnv(t)
	ns := e.namespace()
	ctx := context.Background()
	e.createApp(ns, "fought", map[string]any{"greeting": "hi"}, nil)
	e.waitCondition(ns, "fought", reconciler.TypeReady, metav1.ConditionTrue, "")

	edit := func(greeting string) {
		t.Helper()
		patch := fmt.Sprintf(`{"data":{"greeting":%q}}`, greeting)
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Patch(ctx, "fought-config", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		edit(fmt.Sprintf("theirs-%d", i))
		e.waitGreeting(ns, "fought", "hi")
		e.waitCondition(ns, "fought", reconciler.TypeDrifted, metav1.ConditionFalse, reconciler.ReasonDriftRepaired)
	}

	// Past the limit: reported, left alone.
	edit("theirs-2")
	u := e.waitCondition(ns, "fought", reconciler.TypeDrifted, metav1.ConditionTrue, reconciler.ReasonRepairSuspended)
	if msg := condition(u, reconciler.TypeDrifted).Message; !containsAll(msg, "ConfigMap "+ns+"/fought-config", ".data.greeting", "2 repairs within 1m0s", "annotation") {
		t.Errorf("Drifted message %q", msg)
	}
	e.waitEvents(ns, "fought", reconciler.ReasonRepairSuspended)
	key := map[string]string{releasemetrics.LabelNamespace: ns, releasemetrics.LabelName: "fought"}
	if got := gaugeValue(t, releasemetrics.Drifted, key); got != 1 {
		t.Errorf("%s = %v while repair is suspended, want 1", releasemetrics.Drifted, got)
	}
	// The other controller goes on; the operator sees it and does nothing.
	before := reconciles(t)
	edit("theirs-3")
	waitReconciledSince(t, before)
	waitSettled(t, &requests)
	if got, _ := e.greeting(ns, "fought"); got != "theirs-3" {
		t.Errorf("greeting %q: repaired while suspended", got)
	}
	idle := requests.Load()
	time.Sleep(3 * time.Second)
	t.Logf("suspended and idle: %d API requests in 3s", requests.Load()-idle)
	if n := requests.Load() - idle; n != 0 {
		t.Errorf("%d API requests while suspended and idle, want 0", n)
	}

	// An annotation resumes repair.
	if _, err := e.dyn.Resource(appGVR).Namespace(ns).Patch(ctx, "fought", types.MergePatchType, []byte(`{"metadata":{"annotations":{"chartpilot.example.com/fight":"over"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGreeting(ns, "fought", "hi")
	// DriftRepaired, or NoDrift once a reconcile that read the CR before the
	// repair's status write has written over it.
	e.waitCondition(ns, "fought", reconciler.TypeDrifted, metav1.ConditionFalse, "")
}

// gaugeValue is the value of the gauge name whose labels include match.
func gaugeValue(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m.GetLabel(), match) {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, match)
	return 0
}
