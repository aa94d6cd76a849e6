package release

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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster/clustertest"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

var indexLabels = map[string]string{"chartpilot/managed": "true"}

func TestWriteLogOverlay(t *testing.T) {
	written := func(rv string) cachedRecord {
		return cachedRecord{resourceVersion: rv, release: &helmrelease.Release{}}
	}
	deleted := cachedRecord{}
	tests := []struct {
		name  string
		wrote map[string]cachedRecord
		index map[string]cachedRecord
		// wantKept are the writes still remembered after a look: those
		// the index does not show yet.
		wantKept []string
	}{
		{name: "nothing written"},
		{name: "write shown", wrote: map[string]cachedRecord{"r.v1": written("5")}, index: map[string]cachedRecord{"r.v1": {resourceVersion: "5"}}},
		{name: "write not shown yet", wrote: map[string]cachedRecord{"r.v2": written("7")}, index: map[string]cachedRecord{"r.v1": {resourceVersion: "5"}}, wantKept: []string{"r.v2"}},
		{name: "older version shown", wrote: map[string]cachedRecord{"r.v1": written("6")}, index: map[string]cachedRecord{"r.v1": {resourceVersion: "5"}}, wantKept: []string{"r.v1"}},
		{name: "delete shown", wrote: map[string]cachedRecord{"r.v1": deleted}},
		{name: "delete not shown yet", wrote: map[string]cachedRecord{"r.v1": deleted}, index: map[string]cachedRecord{"r.v1": {resourceVersion: "5"}}, wantKept: []string{"r.v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w writeLog
			for k, r := range tt.wrote {
				w.wrote("r", k, r)
			}
			// The first look lays every write over the index.
			if got := slices.Sorted(maps.Keys(w.overlay("r", tt.index))); !slices.Equal(got, slices.Sorted(maps.Keys(tt.wrote))) {
				t.Fatalf("overlay %v, want every write %v", got, slices.Sorted(maps.Keys(tt.wrote)))
			}
			// What the index showed is forgotten; the rest is kept.
			if again := slices.Sorted(maps.Keys(w.overlay("r", tt.index))); !slices.Equal(again, tt.wantKept) {
				t.Fatalf("second look: overlay %v, want %v", again, tt.wantKept)
			}
		})
	}
}

// frozenIndex serves the record index as it was when frozen: an informer
// that has fallen behind.
type frozenIndex struct {
	client.Reader
	frozen *metav1.PartialObjectMetadataList
}

func (f *frozenIndex) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if f.frozen == nil {
		return f.Reader.List(ctx, list, opts...)
	}
	f.frozen.DeepCopyInto(list.(*metav1.PartialObjectMetadataList))
	return nil
}

func (f *frozenIndex) freeze(t *testing.T, ns string) {
	t.Helper()
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(secretListGVK)
	if err := f.Reader.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "app"}); err != nil {
		t.Fatal(err)
	}
	f.frozen = l
}

// indexedFixture is a fixture whose client reads history through a real
// informer cache, counting the API requests it sends.
func indexedFixture(t *testing.T) (*fixture, *frozenIndex, *atomic.Int64) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	informers, err := NewRecordIndex(restConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	idx := &frozenIndex{Reader: informers}
	var requests atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	}
	if f.client, err = NewClient(cfg, WithRecordIndex(idx, indexLabels)); err != nil {
		t.Fatal(err)
	}
	return f, idx, &requests
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The whole lifecycle behaves the same with the index, and a release in
// sync is observed without a request once the index has caught up.
func TestRecordIndexLifecycle(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, _, requests := indexedFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "one"}), ActionInstall)
	f.mustReconcile(f.request(map[string]any{"greeting": "two"}), ActionUpgrade)
	if got := f.greeting(); got != "two" {
		t.Fatalf("greeting %q after the upgrade, want two", got)
	}
	req := f.request(map[string]any{"greeting": "two"})
	req.SkipDrift = true
	var st State
	for range 50 { // the informer catches up within a few observations
		before := requests.Load()
		var err error
		if st, err = f.client.Observe(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if requests.Load() == before {
			break
		}
	}
	if st.Status != InSync || st.Deployed.Version != 2 {
		t.Fatalf("observed %s revision %d, want InSync revision 2", st.Status, st.Deployed.Version)
	}
	before := requests.Load()
	if _, err := f.client.Observe(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Fatalf("observing a release in sync sent %d requests, want 0", n)
	}
	if err := f.client.Uninstall(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if st, err := f.client.Observe(context.Background(), req); err != nil || st.Status != Absent {
		t.Fatalf("after uninstall: %s, %v; want Absent", st.Status, err)
	}
}

// An index that has not seen this process's writes is not trusted: an
// upgrade is observed right after it, not the revision before.
func TestRecordIndexBehindWrites(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, idx, _ := indexedFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "one"}), ActionInstall)
	idx.freeze(t, f.ns)
	f.mustReconcile(f.request(map[string]any{"greeting": "two"}), ActionUpgrade)
	st, err := f.client.Observe(context.Background(), f.request(map[string]any{"greeting": "two"}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != InSync || st.Deployed.Version != 2 {
		t.Fatalf("with a stale index: %s revision %d (%s), want InSync revision 2", st.Status, st.Deployed.Version, st.Reason)
	}
	// A reconcile with the stale index runs no action either.
	f.mustReconcile(f.request(map[string]any{"greeting": "two"}))
}

// A release deployed by another tool (records without our labels) is read
// from the API server, not taken as absent.
func TestRecordIndexAdoptedRelease(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, _, _ := indexedFixture(t)
	plain, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Reconcile(context.Background(), f.request(map[string]any{"greeting": "one"})); err != nil {
		t.Fatal(err)
	}
	st, err := f.client.Observe(context.Background(), f.request(map[string]any{"greeting": "one"}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != InSync {
		t.Fatalf("a release written without the index labels: %s (%s), want InSync", st.Status, st.Reason)
	}
}

// Unlocking a revision read through the index (a slim copy: no templates, no
// values) writes back the whole revision, so that a later rollback to it
// still renders the release.
func TestRecordIndexUnlockKeepsRevision(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, _, requests := indexedFixture(t)
	f.mustReconcile(f.request(map[string]any{"greeting": "one"}), ActionInstall)
	req := f.request(map[string]any{"greeting": "two"})
	f.mustReconcile(req, ActionUpgrade)
	// A crash after Helm wrote the pending revision and before it
	// superseded the deployed one: the index shows both.
	store := f.client.actionConfig(f.ns).Releases
	deployed := mustV1(t)(store.Deployed("app"))
	pending := *deployed
	info := *deployed.Info
	pending.Info, pending.Version = &info, deployed.Version+1
	pending.Info.Status = releasecommon.StatusPendingUpgrade
	if err := store.Create(&pending); err != nil {
		t.Fatal(err)
	}

	// Observe until the index shows the pending revision: then Observe
	// sends nothing and hands the unlock the slim copy.
	var st State
	var err error
	for range 50 {
		before := requests.Load()
		if st, err = f.client.Observe(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if st.Status == Locked && requests.Load() == before {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Status != Locked || st.Latest.Chart == nil || len(st.Latest.Chart.Templates) != 0 {
		t.Fatalf("observed %s: want Locked with the index's slim revision", st.Status)
	}
	if _, err := f.reconcile(req); err != nil {
		t.Fatal(err)
	}

	plain, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	got := mustV1(t)(plain.actionConfig(f.ns).Releases.Get("app", pending.Version))
	if got.Info.Status != releasecommon.StatusFailed {
		t.Errorf("unlocked revision %d is %s, want failed", got.Version, got.Info.Status)
	}
	if len(got.Chart.Templates) == 0 || got.Config["greeting"] != "two" {
		t.Errorf("unlocked revision %d lost its chart templates (%d) or values (%v)", got.Version, len(got.Chart.Templates), got.Config)
	}
}

// The install of a new release sends no LIST of the namespace's Secrets:
// the index holds every Helm record of the namespace, so one that shows no
// record of the name proves the release absent, for Observe and for Helm's
// own check of the name.
func TestRecordIndexInstallListsNothing(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, _, _ := indexedFixture(t)
	var lists atomic.Int64
	cfg := rest.CopyConfig(restConfig)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/secrets") {
				lists.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	var err error
	if f.client, err = NewClient(cfg, WithRecordIndex(f.client.records, indexLabels)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		req := f.request(map[string]any{"greeting": "hi"})
		req.Name = fmt.Sprintf("app-%d", i)
		f.mustReconcile(req, ActionInstall)
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("3 installs listed Secrets %d times, want 0", n)
	}
}

// A release of another tool whose first revisions were pruned (Helm keeps
// the last 10 by default) is found and upgraded, not installed over: a
// check of the first revision's record alone would have missed it.
func TestRecordIndexPrunedForeignRelease(t *testing.T) {
	clustertest.SkipIfShort(t)
	f, _, _ := indexedFixture(t)
	plain, err := NewClient(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"one", "two", "three"} {
		if _, err := plain.Reconcile(context.Background(), f.request(map[string]any{"greeting": g})); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.cs.CoreV1().Secrets(f.ns).Delete(context.Background(), "sh.helm.release.v1.app.v1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	res := f.mustReconcile(f.request(map[string]any{"greeting": "four"}), ActionUpgrade)
	if res.State.Deployed.Version != 4 {
		t.Errorf("revision %d deployed, want 4: the release was not upgraded from its history", res.State.Deployed.Version)
	}
	if f.greeting() != "four" {
		t.Errorf("greeting %q, want four", f.greeting())
	}
}
