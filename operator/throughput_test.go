package operator

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

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
	e := newEnv(t)
	ns := e.namespace()
	// Only this namespace: the CRs other tests leave are not counted.
	startOperator(t, func(o *Options, _ *watches.Watch) { o.Config, o.Namespaces = cfg, []string{ns} })
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

// runOperator runs an operator for the App kind in namespace ns until the
// returned stop is called (or the test ends).
func runOperator(t *testing.T, ns string) (stop func()) {
	t.Helper()
	w := appWatch(t, "testdata/charts/app")
	mgr, err := New(Options{Config: restConfig, Watches: []watches.Watch{w}, Namespaces: []string{ns}, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		MaxConcurrentReconciles: 4, Log: logr.Discard(), SkipNameValidation: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// After a start (or a takeover), a CR that changed while no operator ran is
// reconciled before the first checks of the CRs whose status says they are
// settled (deferred, or queued by the watches of dependent objects that the
// changed CR's reconcile starts), and those checks still find what changed
// in the cluster meanwhile: here a ConfigMap of a settled release, deleted
// while no operator ran, is restored after the changed CR is upgraded.
func TestStartServesChangedCRsFirst(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	stop := runOperator(t, ns)
	for _, name := range []string{"settled", "changed"} {
		e.createApp(ns, name, map[string]any{"greeting": "hi"}, nil)
	}
	for _, name := range []string{"settled", "changed"} {
		e.waitCondition(ns, name, reconciler.TypeReady, metav1.ConditionTrue, "")
	}
	stop()

	ctx := context.Background()
	if err := e.cs.CoreV1().ConfigMaps(ns).Delete(ctx, "settled-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.patchApp(ns, "changed", map[string]any{"spec": map[string]any{"greeting": "new"}})
	started := time.Now()
	runOperator(t, ns)
	upgraded := e.waitConfigMap(ns, "changed-config", "new")
	restored := e.waitConfigMap(ns, "settled-config", "hi")
	t.Logf("after the start: the changed CR upgraded in %s, the settled one's drift repaired in %s",
		upgraded.Sub(started).Round(time.Millisecond), restored.Sub(started).Round(time.Millisecond))
	if !upgraded.Before(restored) {
		t.Errorf("the settled CR was checked (%s) before the changed one was upgraded (%s)", restored.Sub(started), upgraded.Sub(started))
	}
}
