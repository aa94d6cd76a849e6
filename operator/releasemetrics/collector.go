package releasemetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// collector holds the few numbers of each CR and makes its series at each
// scrape. Kept as series of the client library's vectors, the same numbers
// cost some 8 KiB per CR (each series its label values, label pairs and
// metric), as much as the rest of what the operator holds for a release in
// sync.
type collector struct {
	mu  sync.Mutex
	crs map[crKey]*crState

	reconciles, duration, actions, revision, ready, drifted, failed,
	lastSuccess, repairs, unhealthy, rollbacks, suspended *prometheus.Desc
}

type crKey struct{ kind, namespace, name string }

// crState is what the series of one CR say.
type crState struct {
	successes, errors uint64
	// durations: the count in each of durationBuckets (not cumulative),
	// their count and sum.
	buckets   [4]uint64
	count     uint64
	sum       float64
	actions   []actionCount
	revision  float64
	unhealthy float64
	repairs   float64
	rollbacks float64
	// lastSuccess is exported once the CR succeeded.
	lastSuccess                       float64
	succeeded                         bool
	ready, drifted, failed, suspended bool
}

type actionCount struct {
	action, result string
	n              float64
}

func newCollector() *collector {
	cr := []string{LabelKind, LabelNamespace, LabelName}
	with := func(extra ...string) []string { return append(append([]string(nil), cr...), extra...) }
	desc := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &collector{
		crs:         map[crKey]*crState{},
		reconciles:  desc(Reconciles, "Reconciles of a custom resource's release, by result (success or error).", with(LabelResult)),
		duration:    desc(ReconcileDuration, "How long reconciles of a custom resource's release took.", cr),
		actions:     desc(HelmActions, "Helm actions run on a custom resource's release (install, upgrade, rollback, uninstall, unlock, repair), by result.", with(LabelAction, LabelResult)),
		revision:    desc(Revision, "The revision of the release deployed now; 0 when none is.", cr),
		ready:       desc(Ready, "1 when every object of the release is ready, else 0.", cr),
		drifted:     desc(Drifted, "1 when the last reconcile found objects of the release changed in the cluster, else 0.", cr),
		failed:      desc(Failed, "1 when the last reconcile of the release failed, else 0.", cr),
		lastSuccess: desc(LastSuccessTimestamp, "Unix time of the last successful reconcile of the release.", cr),
		repairs:     desc(DriftRepairs, "Drift repairs of the release: objects deleted or edited in the cluster restored.", cr),
		unhealthy:   desc(UnhealthyObjects, "Objects of the release (and pods of its workloads) not healthy at the last reconcile.", cr),
		rollbacks:   desc(UnhealthyRollbacks, "Automatic rollbacks of revisions of the release that regressed or were not healthy by their health deadline.", cr),
		suspended:   desc(RepairSuspended, "1 while the repair of the release's drift is suspended: something else kept changing its objects; else 0.", cr),
	}
}

// state returns the CR's state, new if it has none. Call with c.mu held.
func (c *collector) state(k crKey) *crState {
	s, ok := c.crs[k]
	if !ok {
		s = &crState{}
		c.crs[k] = s
	}
	return s
}

func (s *crState) observe(seconds float64) {
	for i, b := range durationBuckets {
		if seconds <= b {
			s.buckets[i]++
			break
		}
	}
	s.count++
	s.sum += seconds
}

func (s *crState) countAction(action, result string) {
	for i := range s.actions {
		if a := &s.actions[i]; a.action == action && a.result == result {
			a.n++
			return
		}
	}
	s.actions = append(s.actions, actionCount{action: action, result: result, n: 1})
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.reconciles, c.duration, c.actions, c.revision, c.ready, c.drifted, c.failed,
		c.lastSuccess, c.repairs, c.unhealthy, c.rollbacks, c.suspended} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.crs {
		l := []string{k.kind, k.namespace, k.name}
		counter := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append(l, extra...)...)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
		}
		if s.successes > 0 {
			counter(c.reconciles, float64(s.successes), ResultSuccess)
		}
		if s.errors > 0 {
			counter(c.reconciles, float64(s.errors), ResultError)
		}
		cumulative, buckets := uint64(0), make(map[float64]uint64, len(durationBuckets))
		for i, b := range durationBuckets {
			cumulative += s.buckets[i]
			buckets[b] = cumulative
		}
		ch <- prometheus.MustNewConstHistogram(c.duration, s.count, s.sum, buckets, l...)
		for _, a := range s.actions {
			counter(c.actions, a.n, a.action, a.result)
		}
		// A CR seen once has every series but its last success, so that an
		// alert on a rate or an absent repair has a zero to start from.
		counter(c.repairs, s.repairs)
		counter(c.rollbacks, s.rollbacks)
		gauge(c.revision, s.revision)
		gauge(c.ready, bit(s.ready))
		gauge(c.drifted, bit(s.drifted))
		gauge(c.suspended, bit(s.suspended))
		gauge(c.failed, bit(s.failed))
		gauge(c.unhealthy, s.unhealthy)
		if s.succeeded {
			gauge(c.lastSuccess, s.lastSuccess)
		}
	}
}
