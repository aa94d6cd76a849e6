package reconciler

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// crState is everything the reconciler remembers of one CR between its
// reconciles. It lives in memory only: a new process starts afresh (see
// firstpass.go for how it treats that first reconcile).
type crState struct {
	// seen: this process has reconciled the CR (see firstpass.go).
	seen bool
	// failure is the current attempt's failures and when the next may
	// start (see Backoff).
	failure failure
	// drift is the current attempt's recent repairs (see DriftLimit).
	drift driftRecord
	// overwritten are the CR's versions this reconciler wrote over (see
	// stale.go).
	overwritten map[string]bool
}

// memory holds the state of every CR, under one lock. The controller never
// reconciles one CR in two workers at once; the lock is for the map.
type memory struct {
	mu   sync.Mutex
	byCR map[types.NamespacedName]*crState
}

// with calls fn with the CR's state (a zero one the first time).
func (m *memory) with(key types.NamespacedName, fn func(*crState)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byCR[key]
	if !ok {
		if m.byCR == nil {
			m.byCR = map[types.NamespacedName]*crState{}
		}
		s = &crState{}
		m.byCR[key] = s
	}
	fn(s)
}

// forget drops everything remembered of a CR: the one place it is dropped,
// when the CR is gone or its release uninstalled.
func (m *memory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byCR, key)
}
