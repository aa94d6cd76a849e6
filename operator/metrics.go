package operator

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
)

// releaseMetrics exports what the releases do, beside controller-runtime's
// reconcile counts and durations: Helm actions by kind, action and result,
// and releases by state.
type releaseMetrics struct {
	kind    string
	actions *prometheus.CounterVec
	states  *prometheus.GaugeVec

	mu   sync.Mutex
	last map[types.NamespacedName]string
}

func newReleaseMetrics(kind string, reg prometheus.Registerer) *releaseMetrics {
	m := &releaseMetrics{
		kind: kind,
		actions: releasemetrics.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chartpilot_release_actions_total",
			Help: "Helm actions run on releases, by custom resource kind, action and result.",
		}, []string{"kind", "action", "result"})),
		states: releasemetrics.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "chartpilot_releases",
			Help: "Releases by custom resource kind and state (InSync, Drifted, Failed...) at their last reconcile.",
		}, []string{"kind", "state"})),
		last: map[types.NamespacedName]string{},
	}
	return m
}

// Observe records one reconcile of a CR.
func (m *releaseMetrics) Observe(key types.NamespacedName, state string, actions []release.Performed) {
	for _, a := range actions {
		result := "success"
		if a.Err != nil {
			result = "failure"
		}
		m.actions.WithLabelValues(m.kind, a.Action, result).Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.last[key]; ok {
		if prev == state {
			return
		}
		m.states.WithLabelValues(m.kind, prev).Dec()
	}
	m.last[key] = state
	m.states.WithLabelValues(m.kind, state).Inc()
}

// Forget drops a CR that is gone.
func (m *releaseMetrics) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.last[key]; ok {
		m.states.WithLabelValues(m.kind, prev).Dec()
		delete(m.last, key)
	}
}

// forgetAll drops every CR: a term of leadership that ends reports no
// releases, so that the next one's (in the same process, sharing the
// gauge) do not count twice.
func (m *releaseMetrics) forgetAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, prev := range m.last {
		m.states.WithLabelValues(m.kind, prev).Dec()
		delete(m.last, key)
	}
}

// Start holds the CRs' states while the manager runs as leader, and drops
// them when it stops (manager.Runnable; started only once elected).
func (m *releaseMetrics) Start(ctx context.Context) error {
	<-ctx.Done()
	m.forgetAll()
	return nil
}
