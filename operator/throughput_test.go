package operator

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// tally counts requests by verb and resource ("PUT apps/status"), watches
// left out: they stay open.
type tally struct {
	mu sync.Mutex
	by map[string]int
}

func (t *tally) add(r *http.Request) bool {
	if r.URL.Query().Get("watch") == "true" {
		return false
	}
	key := r.Method + " " + resourceOf(r.URL.Path)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]int{}
	}
	t.by[key]++
	return true
}

func (t *tally) take() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	by := t.by
	t.by = nil
	return by
}

// An install sends only the requests it cannot do without, each named
// here: what the informer caches can answer (the release's records, the
// CR, the objects it created) is not asked of the API server, and a
// reconcile queued by the install's own objects, before the cache has its
// writes to the CR, writes nothing.
func TestInstallRequests(t *testing.T) {
	clustertest.SkipIfShort(t)
	var n atomic.Int64
	var counted tally
	var on atomic.Bool
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, n: &n, match: func(r *http.Request) bool {
			return on.Load() && counted.add(r)
		}}
	}
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Config = cfg })
	e := newEnv(t)
	ns := e.namespace()
	e.createApp(ns, "warm", map[string]any{"greeting": "hi"}, nil) // the informers start
	e.waitCondition(ns, "warm", reconciler.TypeReady, metav1.ConditionTrue, "")
	waitSettled(t, &n)

	const installs = 8
	on.Store(true)
	for i := range installs {
		e.createApp(ns, fmt.Sprintf("new-%d", i), map[string]any{"greeting": "hi"}, nil)
	}
	for i := range installs {
		e.waitCondition(ns, fmt.Sprintf("new-%d", i), reconciler.TypeReady, metav1.ConditionTrue, "")
	}
	waitSettled(t, &n)
	got := counted.take()

	// Per install of the app chart (a ConfigMap and a Service).
	want := map[string]int{
		"PUT apps":        1, // the finalizer
		"POST secrets":    1, // the release record, pending-install
		"GET configmaps":  1, // Helm's check that the objects are not another's
		"GET services":    1,
		"POST configmaps": 1,
		"POST services":   1,
		"PUT secrets":     1, // the release record, deployed
		"PUT apps/status": 1,
		"POST events":     1, // Installed
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		t.Logf("%s: %.2f per install", k, float64(got[k])/installs)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k]*installs {
			t.Errorf("%s: %d requests for %d installs, want %d", k, got[k], installs, want[k]*installs)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %d requests for %d installs, want none", k, got[k], installs)
		}
	}
}
