package reconciler

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestOverwritten(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	other := types.NamespacedName{Namespace: "ns", Name: "b"}
	tests := []struct {
		name string
		// wrote are the writes, in order: the version each wrote over and
		// the one it made.
		wrote [][2]string
		// reads are the versions the cache shows, in order, and whether
		// each is stale.
		reads []string
		want  []bool
	}{
		{name: "nothing written", reads: []string{"1"}, want: []bool{false}},
		{name: "the version written over", wrote: [][2]string{{"1", "2"}}, reads: []string{"1"}, want: []bool{true}},
		{name: "a finalizer then a status written over", wrote: [][2]string{{"1", "2"}, {"2", "3"}}, reads: []string{"1", "2", "3"}, want: []bool{true, true, false}},
		{name: "a later version ends it", wrote: [][2]string{{"1", "2"}}, reads: []string{"2", "1"}, want: []bool{false, false}},
		// The API server pruned all the write changed: no later version
		// comes, and waiting for one would hold the CR for good (a
		// deletion never finalized).
		{name: "a write that changed nothing", wrote: [][2]string{{"4", "4"}}, reads: []string{"4"}, want: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m memory
			wrote := func(key types.NamespacedName, w [2]string) { m.with(key, func(s *crState) { s.wrote(w[0], w[1]) }) }
			stale := func(key types.NamespacedName, rv string) (b bool) {
				m.with(key, func(s *crState) { b = s.stale(rv) })
				return b
			}
			for _, rv := range tt.wrote {
				wrote(key, rv)
			}
			wrote(other, [2]string{"1", "2"})
			for i, rv := range tt.reads {
				if got := stale(key, rv); got != tt.want[i] {
					t.Errorf("read %d (version %s): stale %v, want %v", i, rv, got, tt.want[i])
				}
			}
			if !stale(other, "1") {
				t.Error("another CR's versions were forgotten")
			}
		})
	}
}
