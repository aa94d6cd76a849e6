package operator

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// A fleet of releases in sync, each reconciled every second, sends the API
// server nothing but its informers' watches: no read, no write. The
// operator's own count (RequestsMetric) says so, and a count of the
// requests at the transport agrees; a missing or silent metric fails the
// test rather than passing it. This is the benchmark's idle check (operator/e2e)
// at the suite's scale.
func TestIdleFleetSendsNoRequests(t *testing.T) {
	clustertest.SkipIfShort(t)
	const (
		crs    = 30
		period = time.Second
		idle   = 6 * time.Second
	)
	var sent atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, n: &sent, match: func(r *http.Request) bool { return verb(r) != VerbWatch }}
	}
	e := newEnv(t)
	ns := e.namespace()
	startOperator(t, func(o *Options, _ *watches.Watch) {
		o.Config, o.Namespaces, o.ReconcilePeriod = cfg, []string{ns}, period
	})
	before := requestsByVerb(t)
	for i := range crs {
		// A health deadline of 1 s: each release is recorded healthy
		// before the idle window, rather than during it.
		e.createApp(ns, fmt.Sprintf("idle-%d", i), map[string]any{"greeting": "hi"}, nil)
		e.patchApp(ns, fmt.Sprintf("idle-%d", i), map[string]any{"metadata": map[string]any{"annotations": map[string]any{reconciler.AnnotationHealthDeadline: "1s"}}})
	}
	for i := range crs {
		e.waitEvents(ns, fmt.Sprintf("idle-%d", i), reconciler.EventHealthVerified)
		e.waitCondition(ns, fmt.Sprintf("idle-%d", i), reconciler.TypeReady, metav1.ConditionTrue, "")
	}
	// The metric counted the fleet's installs: it is there and counts.
	installed := requestsByVerb(t)
	if n := installed["create"] - before["create"]; n < crs {
		t.Fatalf("%s counted %.0f creates while %d releases installed: the metric does not count the operator's requests", RequestsMetric, n, crs)
	}
	waitRequestsSettled(t, &sent)

	controller := map[string]string{"controller": "app.charts.example.com.v1alpha1"}
	reconciles0, verbs0, sent0 := counterSum(t, "controller_runtime_reconcile_total", controller), requestsByVerb(t), sent.Load()
	time.Sleep(idle)
	reconciles := counterSum(t, "controller_runtime_reconcile_total", controller) - reconciles0
	verbs1, extra := requestsByVerb(t), sent.Load()-sent0

	// Every CR reconciled at least every other second: the window holds
	// no-op reconciles, not an operator that does nothing.
	if want := float64(crs) * idle.Seconds() / period.Seconds() / 2; reconciles < want {
		t.Errorf("%.0f reconciles of %d CRs in %s with a reconcile period of %s, want at least %.0f", reconciles, crs, idle, period, want)
	}
	var requests []string
	for _, v := range slices.Sorted(maps.Keys(verbs1)) {
		if n := verbs1[v] - verbs0[v]; n > 0 && v != VerbWatch {
			requests = append(requests, fmt.Sprintf("%.0f %s", n, v))
		}
	}
	t.Logf("%d CRs in sync, %s: %.0f reconciles, %.0f watches renewed, other requests: %v (counted at the transport: %d)",
		crs, idle, reconciles, verbs1[VerbWatch]-verbs0[VerbWatch], requests, extra)
	if len(requests) > 0 {
		t.Errorf("%d releases in sync sent API requests in %s of no-op reconciles: %s; want none but watches", crs, idle, strings.Join(requests, ", "))
	}
	if extra > 0 && len(requests) == 0 {
		t.Errorf("%d requests other than watches went out in %s, but %s counted none: the metric misses requests", extra, idle, RequestsMetric)
	}
}

// requestsByVerb reads RequestsMetric from the operator's registry by verb,
// and fails the test when the metric is not there.
func requestsByVerb(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != RequestsMetric {
			continue
		}
		out := map[string]float64{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
		return out
	}
	t.Fatalf("the operator's registry has no %s: the idle check cannot count requests", RequestsMetric)
	return nil
}

// waitRequestsSettled waits until the operator has sent no request but
// watches for 2 s (the installs' last status writes and events), at most
// 20 s: one that never settles is measured anyway, and fails there.
func waitRequestsSettled(t *testing.T, n *atomic.Int64) {
	t.Helper()
	last, since := n.Load(), time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		if cur := n.Load(); cur != last {
			last, since = cur, time.Now()
		}
		return time.Since(since) >= 2*time.Second, nil
	})
	if err != nil {
		t.Logf("the operator kept sending requests for 20 s (%d sent)", n.Load())
	}
}
