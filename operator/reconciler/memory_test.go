package reconciler

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Everything remembered of a CR goes at once when it is forgotten, and
// nothing of another CR with it.
func TestMemoryForget(t *testing.T) {
	var m memory
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	now := time.Unix(1000, 0)
	limit := DriftLimit{Repairs: 1, Window: time.Minute}
	remember := func(s *crState) {
		s.first()
		s.failure.failed(Backoff{}, "x", now, false)
		s.drift.repaired(limit, "x", now)
		s.wrote("7", "8")
	}
	m.with(a, remember)
	m.with(b, remember)
	m.forget(a)
	m.with(a, func(s *crState) {
		if !reflect.DeepEqual(*s, crState{}) {
			t.Errorf("a forgotten CR's state: %+v", *s)
		}
	})
	m.with(b, func(s *crState) {
		if !s.seen || s.failure.failures != 1 || len(s.drift.repairs) != 1 || !s.overwritten["7"] {
			t.Errorf("another CR's state went too: %+v", *s)
		}
	})
}
