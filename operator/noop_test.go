package operator

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// countingTransport counts the requests an operator sends, or those that
// match says to.
type countingTransport struct {
	next  http.RoundTripper
	n     *atomic.Int64
	match func(*http.Request) bool
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.match == nil || c.match(r) {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// secretListing matches a LIST of Secrets (the release records), not a
// watch of them.
func secretListing(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets") && r.URL.Query().Get("watch") != "true"
}

// A reconcile of a release in sync runs no Helm action and sends no request:
// the release history comes from the record index, the objects from the
// informer cache. So too with autoscaling on (an HPA and a Deployment
// without replicas in the release), and for a release within its health
// deadline (watched) as for one recorded healthy (verified).
func TestNoOpReconcileIsCheap(t *testing.T) {
	clustertest.SkipIfShort(t)
	tests := []struct {
		name string
		spec map[string]any
		// deployment: the release has one, to be marked ready.
		deployment bool
		// deadline, when set, is the CR's health deadline, waited out until
		// the revision is recorded healthy.
		deadline string
	}{
		{name: "watched", spec: map[string]any{"greeting": "hi"}},
		{name: "verified", spec: map[string]any{"greeting": "hi"}, deadline: "1s"},
		{name: "autoscaled", deployment: true, spec: map[string]any{"greeting": "hi", "withDeployment": true,
			autoscale.Field: map[string]any{"enabled": true, "minReplicas": 1, "maxReplicas": 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { noOpReconciles(t, tt.spec, tt.deployment, tt.deadline) })
	}
}

// startCounted runs an operator for the App kind, watching ns alone, until
// the test ends, and returns the count of the API requests it sends. What
// other tests left in their namespaces (a CR still retrying, or being
// deleted) then costs it nothing.
func startCounted(t *testing.T, ns string) *atomic.Int64 {
	clustertest.SkipIfShort(t)
	var requests atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} }
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Config, o.Namespaces = cfg, []string{ns} })
	return &requests
}

func noOpReconciles(t *testing.T, spec map[string]any, deployment bool, deadline string) {
	e := newEnv(t)
	ns := e.namespace()
	requests := startCounted(t, ns)
	e.createApp(ns, "quiet", spec, nil)
	if deployment {
		e.waitCondition(ns, "quiet", reconciler.TypeDeployed, metav1.ConditionTrue, "")
		markReady(t, e, ns, "quiet")
	}
	if deadline != "" {
		e.patchApp(ns, "quiet", map[string]any{"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: deadline}}})
		e.waitEvents(ns, "quiet", reconciler.EventHealthVerified)
	}
	e.waitCondition(ns, "quiet", reconciler.TypeReady, metav1.ConditionTrue, "")
	waitSettled(t, requests)

	actionsBefore := counterSum(t, "chartpilot_release_actions_total", nil)
	reconcilesBefore := counterSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "app.charts.example.com.v1alpha1"})
	requestsBefore := requests.Load()
	const pokes = 10
	for i := range pokes {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"poke":"%d"}}}`, i)
		if _, err := e.dyn.Resource(appGVR).Namespace(ns).Patch(context.Background(), "quiet", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		// One at a time, so that the queue does not fold pokes together.
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return counterSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "app.charts.example.com.v1alpha1"}) >= reconcilesBefore+float64(i+1), nil
		})
		if err != nil {
			t.Fatalf("poke %d did not reconcile", i)
		}
	}
	reconciles := counterSum(t, "controller_runtime_reconcile_total", map[string]string{"controller": "app.charts.example.com.v1alpha1"}) - reconcilesBefore
	perReconcile := float64(requests.Load()-requestsBefore) / reconciles
	t.Logf("%.0f no-op reconciles: %.2f API requests each", reconciles, perReconcile)
	if perReconcile > 0 {
		t.Errorf("a no-op reconcile costs %.2f API requests, want none", perReconcile)
	}
	if got := counterSum(t, "chartpilot_release_actions_total", nil); got != actionsBefore {
		t.Errorf("no-op reconciles ran %v Helm actions", got-actionsBefore)
	}
}

// waitSettled waits until the operator has sent nothing for a while.
func waitSettled(t *testing.T, n *atomic.Int64) {
	t.Helper()
	last := n.Load()
	quiet := 0
	for quiet < 10 {
		time.Sleep(100 * time.Millisecond)
		if cur := n.Load(); cur != last {
			last, quiet = cur, 0
			continue
		}
		quiet++
	}
}

// counterSum adds the counters of a metric whose labels include match.
func counterSum(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m.GetLabel(), match) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelsMatch(pairs []*dto.LabelPair, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, p := range pairs {
			if p.GetName() == k && p.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Status writes to the release's objects of kinds that count no generation
// (an HPA's, every sync of the HorizontalPodAutoscaler controller) reconcile
// nothing and send nothing: their views carry a digest of all but the
// status, so a status write is told from a change to what the release set.
func TestStatusWritesWithoutGenerationAreFree(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace()
	requests := startCounted(t, ns)
	ctx := context.Background()
	e.createApp(ns, "scaled", map[string]any{"greeting": "hi", "withDeployment": true,
		autoscale.Field: map[string]any{"enabled": true, "minReplicas": 1, "maxReplicas": 3}}, nil)
	e.waitCondition(ns, "scaled", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	markReady(t, e, ns, "scaled")
	e.waitCondition(ns, "scaled", reconciler.TypeReady, metav1.ConditionTrue, "")
	waitSettled(t, requests)

	controllerLabel := map[string]string{"controller": "app.charts.example.com.v1alpha1"}
	reconcilesBefore := counterSum(t, "controller_runtime_reconcile_total", controllerLabel)
	requestsBefore := requests.Load()
	hpas := e.cs.AutoscalingV2().HorizontalPodAutoscalers(ns)
	const writes = 10
	for i := range writes {
		hpa, err := hpas.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			t.Logf("the HPA's generation: %d", hpa.Generation)
		}
		now := metav1.Now()
		hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: int32(1 + i%2), DesiredReplicas: int32(1 + (i+1)%2), LastScaleTime: &now}
		if _, err := hpas.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitSettled(t, requests)
	if n := counterSum(t, "controller_runtime_reconcile_total", controllerLabel) - reconcilesBefore; n != 0 {
		t.Errorf("%d status writes of the HPA reconciled the CR %.0f times, want 0", writes, n)
	}
	if n := requests.Load() - requestsBefore; n != 0 {
		t.Errorf("%d status writes of the HPA cost the operator %d API requests, want 0", writes, n)
	}
}

// The install of a new CR lists no release records: the record index holds
// every Helm record of the namespace, ours and other tools', so that it
// shows none of a name proves the name free, for the reconcile and for
// Helm's own check. A LIST reads every Secret of the namespace, so at fleet
// scale in one namespace each cost as much as the fleet is large; two per
// install were sent before the index, one with it until it held other
// tools' records too.
func TestInstallListsNoRecords(t *testing.T) {
	clustertest.SkipIfShort(t)
	var listings atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, n: &listings, match: secretListing}
	}
	e := newEnv(t)
	ns := e.namespace()
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Config, o.Namespaces = cfg, []string{ns} })
	e.createApp(ns, "warm", map[string]any{"greeting": "hi"}, nil) // the informers start
	e.waitCondition(ns, "warm", reconciler.TypeReady, metav1.ConditionTrue, "")
	const installs = 5
	before := listings.Load()
	for i := range installs {
		name := fmt.Sprintf("new-%d", i)
		e.createApp(ns, name, map[string]any{"greeting": "hi"}, nil)
		e.waitCondition(ns, name, reconciler.TypeReady, metav1.ConditionTrue, "")
	}
	if n := listings.Load() - before; n != 0 {
		t.Errorf("%d installs listed release records %d times, want 0", installs, n)
	}
}
