package releasemetrics

import (
	"cmp"
	"slices"
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
	// kinds are the counters per kind, which outlive the CRs they count.
	kinds map[string]*kindState
	// limit is Options.SeriesLimit, applied; negative for none.
	limit int

	reconciles, duration, actions, revision, ready, drifted, failed,
	lastSuccess, repairs, unhealthy, rollbacks, suspended *prometheus.Desc

	kindReleases, kindReady, kindFailed, kindDrifted, kindSuspended, kindUnhealthy,
	kindReconciles, kindDuration, kindRepairs, kindRollbacks, kindExported *prometheus.Desc
}

type crKey struct{ kind, namespace, name string }

// crState is what the series of one CR say.
type crState struct {
	successes, errors uint64
	durations         durations
	actions           []actionCount
	revision          float64
	unhealthy         float64
	repairs           float64
	rollbacks         float64
	// lastSuccess is exported once the CR succeeded.
	lastSuccess                       float64
	succeeded                         bool
	ready, drifted, failed, suspended bool
}

// needsAttention says whether the CR is one an alert or a person should
// see: its series are exported even when the series are limited.
func (s *crState) needsAttention() bool {
	return s.failed || !s.ready || s.drifted || s.suspended || s.unhealthy > 0
}

// kindState are the counters of one kind, over all its CRs past and present.
type kindState struct {
	successes, errors  uint64
	durations          durations
	repairs, rollbacks float64
}

// durations are the reconcile durations observed: the count in each of
// durationBuckets (not cumulative), their count and sum.
type durations struct {
	buckets [4]uint64
	count   uint64
	sum     float64
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
	kind := []string{LabelKind}
	return &collector{
		crs:         map[crKey]*crState{},
		kinds:       map[string]*kindState{},
		limit:       DefaultSeriesLimit,
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

		kindReleases:   desc(KindReleases, "Custom resources of the kind the operator holds.", kind),
		kindReady:      desc(KindReady, "Custom resources of the kind whose release has every object ready.", kind),
		kindFailed:     desc(KindFailed, "Custom resources of the kind whose last reconcile failed (or whose release is held back).", kind),
		kindDrifted:    desc(KindDrifted, "Custom resources of the kind whose last reconcile found objects changed in the cluster.", kind),
		kindSuspended:  desc(KindRepairSuspended, "Custom resources of the kind whose drift repair is suspended.", kind),
		kindUnhealthy:  desc(KindUnhealthyObjects, "Objects (and pods) not healthy in the releases of the kind, at their last reconcile.", kind),
		kindReconciles: desc(KindReconciles, "Reconciles of the kind's releases, by result (success or error).", []string{LabelKind, LabelResult}),
		kindDuration:   desc(KindReconcileDuration, "How long reconciles of the kind's releases took.", kind),
		kindRepairs:    desc(KindDriftRepairs, "Drift repairs of the kind's releases.", kind),
		kindRollbacks:  desc(KindUnhealthyRollback, "Automatic rollbacks of the kind's releases that regressed or were not healthy.", kind),
		kindExported:   desc(KindReleasesExported, "Custom resources of the kind whose per-release series this scrape holds (limited above the operator's series limit to those that need attention).", kind),
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

// kindState returns the kind's counters, new if it has none. Call with
// c.mu held.
func (c *collector) kindState(kind string) *kindState {
	k, ok := c.kinds[kind]
	if !ok {
		k = &kindState{}
		c.kinds[kind] = k
	}
	return k
}

func (d *durations) observe(seconds float64) {
	for i, b := range durationBuckets {
		if seconds <= b {
			d.buckets[i]++
			break
		}
	}
	d.count++
	d.sum += seconds
}

// histogram is d as a histogram of desc.
func (d *durations) histogram(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	cumulative, buckets := uint64(0), make(map[float64]uint64, len(durationBuckets))
	for i, b := range durationBuckets {
		cumulative += d.buckets[i]
		buckets[b] = cumulative
	}
	return prometheus.MustNewConstHistogram(desc, d.count, d.sum, buckets, labels...)
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
		c.lastSuccess, c.repairs, c.unhealthy, c.rollbacks, c.suspended,
		c.kindReleases, c.kindReady, c.kindFailed, c.kindDrifted, c.kindSuspended, c.kindUnhealthy,
		c.kindReconciles, c.kindDuration, c.kindRepairs, c.kindRollbacks, c.kindExported} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exported := map[string]float64{}
	for _, k := range c.exported() {
		c.collectCR(ch, k, c.crs[k])
		exported[k.kind]++
	}
	c.collectKinds(ch, exported)
}

// exported are the CRs whose series a scrape holds (see
// Options.SeriesLimit). Call with c.mu held.
func (c *collector) exported() []crKey {
	keys := make([]crKey, 0, len(c.crs))
	limited := c.limit >= 0 && len(c.crs) > c.limit
	for k, s := range c.crs {
		if !limited || s.needsAttention() {
			keys = append(keys, k)
		}
	}
	if !limited || len(keys) <= c.limit {
		return keys
	}
	// The same CRs from scrape to scrape while they need attention.
	slices.SortFunc(keys, func(a, b crKey) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	return keys[:c.limit]
}

// collectCR sends the series of one CR.
func (c *collector) collectCR(ch chan<- prometheus.Metric, k crKey, s *crState) {
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
	ch <- s.durations.histogram(c.duration, l...)
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

// collectKinds sends the series of each kind seen; exported counts the
// CRs of each whose series were sent.
func (c *collector) collectKinds(ch chan<- prometheus.Metric, exported map[string]float64) {
	type gauges struct{ releases, ready, failed, drifted, suspended, unhealthy float64 }
	byKind := make(map[string]*gauges, len(c.kinds))
	for kind := range c.kinds {
		byKind[kind] = &gauges{}
	}
	for k, s := range c.crs {
		g := byKind[k.kind]
		g.releases++
		g.ready += bit(s.ready)
		g.failed += bit(s.failed)
		g.drifted += bit(s.drifted)
		g.suspended += bit(s.suspended)
		g.unhealthy += s.unhealthy
	}
	for kind, g := range byKind {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, kind)
		}
		counter := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append([]string{kind}, extra...)...)
		}
		k := c.kinds[kind]
		gauge(c.kindReleases, g.releases)
		gauge(c.kindReady, g.ready)
		gauge(c.kindFailed, g.failed)
		gauge(c.kindDrifted, g.drifted)
		gauge(c.kindSuspended, g.suspended)
		gauge(c.kindUnhealthy, g.unhealthy)
		gauge(c.kindExported, exported[kind])
		counter(c.kindReconciles, float64(k.successes), ResultSuccess)
		counter(c.kindReconciles, float64(k.errors), ResultError)
		ch <- k.durations.histogram(c.kindDuration, kind)
		counter(c.kindRepairs, k.repairs)
		counter(c.kindRollbacks, k.rollbacks)
	}
}
