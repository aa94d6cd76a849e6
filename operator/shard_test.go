package operator

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

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
