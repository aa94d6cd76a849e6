package operator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// Each CR is reconciled by exactly one of the operators: the one of its
// shard, or the one without a shard when it has none; a watch's own
// selector still applies.
func TestShardWatches(t *testing.T) {
	tier, err := labels.Parse("tier=gold")
	if err != nil {
		t.Fatal(err)
	}
	ws := []watches.Watch{{Kind: "A"}, {Kind: "B", LabelSelector: tier}}
	for _, tc := range []struct {
		shard  string
		labels labels.Set
		want   [2]bool // whether watches A and B take the CR
	}{
		{"", labels.Set{}, [2]bool{true, false}},
		{"", labels.Set{"tier": "gold"}, [2]bool{true, true}},
		{"", labels.Set{ShardLabel: "one"}, [2]bool{false, false}},
		{"one", labels.Set{ShardLabel: "one", "tier": "gold"}, [2]bool{true, true}},
		{"one", labels.Set{ShardLabel: "two"}, [2]bool{false, false}},
		{"one", labels.Set{}, [2]bool{false, false}},
	} {
		got, err := shardWatches(ws, tc.shard)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range got {
			if m := w.LabelSelector.Matches(tc.labels); m != tc.want[i] {
				t.Errorf("shard %q, watch %s, CR labels %v: matches %v, want %v", tc.shard, w.Kind, tc.labels, m, tc.want[i])
			}
		}
	}
	if ws[1].LabelSelector.String() != "tier=gold" {
		t.Errorf("the caller's selector changed: %s", ws[1].LabelSelector)
	}
	if _, err := shardWatches(ws, "not a label/value"); err == nil || !strings.Contains(err.Error(), `shard "not a label/value"`) {
		t.Errorf("a shard that is not a label value: %v", err)
	}
}

// A shard's operator labels the objects and release records of its
// releases with its shard, and its cache holds only those: two shards each
// hold their half. A CR relabelled for another shard is upgraded once by
// that shard's operator, which relabels its objects and records, and they
// move from one cache to the other.
func TestShardCachesHoldTheirShard(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	one := startOperator(t, func(o *Options, _ *watches.Watch) { o.Shard = "one" })
	none := startOperator(t, nil)
	e.createApp(ns, "plain", map[string]any{"greeting": "a"}, nil)
	e.createApp(ns, "sharded", map[string]any{"greeting": "b"}, map[string]string{ShardLabel: "one"})
	e.waitCondition(ns, "plain", reconciler.TypeDeployed, metav1.ConditionTrue, "")
	e.waitCondition(ns, "sharded", reconciler.TypeDeployed, metav1.ConditionTrue, "")

	// cached lists the ConfigMaps and release records of ns in a cache.
	cached := func(c client.Reader) (configMaps, records []string) {
		cms := &unstructured.UnstructuredList{}
		cms.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		if err := c.List(context.Background(), cms, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, cm := range cms.Items {
			configMaps = append(configMaps, cm.GetName())
		}
		secrets := &metav1.PartialObjectMetadataList{}
		secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := c.List(context.Background(), secrets, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			records = append(records, s.Labels["name"])
		}
		slices.Sort(configMaps)
		slices.Sort(records)
		return configMaps, records
	}
	// holds waits until each operator's cache holds the objects and records
	// of the releases named.
	holds := func(want map[manager.Manager][]string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			for mgr, releases := range want {
				cms, recs := cached(mgr.GetCache())
				var wantCMs []string
				for _, r := range releases {
					wantCMs = append(wantCMs, r+"-config")
				}
				if !slices.Equal(cms, wantCMs) || !slices.Equal(slices.Compact(recs), releases) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			for mgr, releases := range want {
				cms, recs := cached(mgr.GetCache())
				t.Errorf("a cache holds ConfigMaps %v and records of %v, want those of %v", cms, recs, releases)
			}
			t.FailNow()
		}
	}
	holds(map[manager.Manager][]string{one: {"sharded"}, none: {"plain"}})
	cm, err := e.cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "sharded-config", metav1.GetOptions{})
	if err != nil || cm.Labels[ShardLabel] != "one" || cm.Labels["app"] != "sharded" {
		t.Fatalf("shard one's ConfigMap is not labelled for it: %v %v", cm.Labels, err)
	}

	e.patchApp(ns, "plain", map[string]any{"metadata": map[string]any{"labels": map[string]any{ShardLabel: "one"}}})
	holds(map[manager.Manager][]string{one: {"plain", "sharded"}, none: nil})
	u := e.waitCondition(ns, "plain", reconciler.TypeDeployed, metav1.ConditionTrue, reconciler.ReasonUpgradeSuccessful)
	if v, _, _ := unstructured.NestedInt64(u.Object, "status", "deployedRelease", "version"); v != 2 {
		t.Errorf("the moved release is at revision %d, want 2 (one upgrade to relabel it)", v)
	}
	if got, err := e.greeting(ns, "plain"); err != nil || got != "a" {
		t.Errorf("the moved release's ConfigMap: %q, %v", got, err)
	}
}
