package releasemetrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"
)

// Metric names.
const (
	Reconciles           = "chartpilot_release_reconciles_total"
	ReconcileDuration    = "chartpilot_release_reconcile_duration_seconds"
	HelmActions          = "chartpilot_release_helm_actions_total"
	Revision             = "chartpilot_release_revision"
	Ready                = "chartpilot_release_ready"
	Drifted              = "chartpilot_release_drifted"
	Failed               = "chartpilot_release_failed"
	LastSuccessTimestamp = "chartpilot_release_last_success_timestamp_seconds"
	DriftRepairs         = "chartpilot_release_drift_repairs_total"
	UnhealthyObjects     = "chartpilot_release_unhealthy_objects"
	UnhealthyRollbacks   = "chartpilot_release_unhealthy_rollbacks_total"
	RepairSuspended      = "chartpilot_release_repair_suspended"
)

// Names lists every metric name, for documentation and checks.
var Names = []string{Reconciles, ReconcileDuration, HelmActions, Revision, Ready, Drifted, Failed, LastSuccessTimestamp, DriftRepairs, UnhealthyObjects, UnhealthyRollbacks, RepairSuspended}

// Names of the series per kind, exported whatever the number of CRs: how
// the fleet is doing when the per-release series are limited (see
// Options.SeriesLimit). Their only label is LabelKind (and LabelResult for
// KindReconciles).
const (
	KindReleases          = "chartpilot_kind_releases"
	KindReady             = "chartpilot_kind_releases_ready"
	KindFailed            = "chartpilot_kind_releases_failed"
	KindDrifted           = "chartpilot_kind_releases_drifted"
	KindRepairSuspended   = "chartpilot_kind_releases_repair_suspended"
	KindUnhealthyObjects  = "chartpilot_kind_unhealthy_objects"
	KindReconciles        = "chartpilot_kind_reconciles_total"
	KindReconcileDuration = "chartpilot_kind_reconcile_duration_seconds"
	KindDriftRepairs      = "chartpilot_kind_drift_repairs_total"
	KindUnhealthyRollback = "chartpilot_kind_unhealthy_rollbacks_total"
	// KindReleasesExported counts the CRs whose per-release series this
	// scrape holds: fewer than KindReleases when they are limited.
	KindReleasesExported = "chartpilot_kind_releases_exported"
)

// KindNames lists every per-kind metric name.
var KindNames = []string{KindReleases, KindReady, KindFailed, KindDrifted, KindRepairSuspended, KindUnhealthyObjects,
	KindReconciles, KindReconcileDuration, KindDriftRepairs, KindUnhealthyRollback, KindReleasesExported}

// DefaultSeriesLimit is Options.SeriesLimit's default. A CR's series are
// about 2.2 KiB of a scrape (measured by BenchmarkScrape), so that a
// scrape stays under 1 MiB at any number of CRs, with the operator's own
// metrics, even when every exported CR needs attention.
const DefaultSeriesLimit = 300

// Label names. Kind is the CR's kind, as in controller-runtime's and the
// operator's other metrics.
const (
	LabelKind      = "kind"
	LabelNamespace = "namespace"
	LabelName      = "name"
	LabelResult    = "result"
	LabelAction    = "action"
)

// Values of LabelResult.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

// Observation is what one reconcile of a CR did and left.
type Observation struct {
	// Duration of the reconcile; Err its error, nil when it succeeded.
	Duration time.Duration
	Err      error
	// Actions are the Helm actions run, by name, with their errors.
	Actions []Action
	// Revision deployed now; 0 when none is.
	Revision int
	// Ready: every object of the release is ready.
	Ready bool
	// Drifted: the reconcile found objects changed in the cluster.
	Drifted bool
	// RepairSuspended: drift is left alone, repaired too often in too short
	// a time (another controller fights the release).
	RepairSuspended bool
	// Unhealthy counts the objects (and pods) not healthy.
	Unhealthy int
	// UnhealthyRollbacks counts the rollbacks of revisions that regressed
	// or were not healthy by their deadline.
	UnhealthyRollbacks int
	// HeldBack: the requested chart and values were rolled back as
	// unhealthy and are not retried; the release counts as failed.
	HeldBack bool
	// At is when the reconcile ended.
	At time.Time
}

// Action is one Helm action of a reconcile.
type Action struct {
	Name string
	Err  error
}

// Recorder records observations into its collector.
type Recorder struct {
	kind       string
	repairName string
	c          *collector
}

// Options configure a Recorder.
type Options struct {
	// Kind is the CR kind the recorder is for.
	Kind string
	// RepairAction is the name of the action that repairs drift, counted
	// apart in DriftRepairs.
	RepairAction string
	// Registerer registers the collector; one already registered (several
	// kinds in one process) is shared.
	Registerer prometheus.Registerer
	// SeriesLimit bounds the CRs whose per-release series a scrape holds,
	// for all kinds of the collector together: while the operator holds at
	// most this many CRs, every CR's; above it, only those of the CRs that
	// need attention (failed, not ready, drifted, repair suspended or with
	// objects not healthy), at most this many, in the order of kind,
	// namespace and name. The series per kind (KindNames) are always
	// exported. 0 takes DefaultSeriesLimit; negative exports every CR's.
	SeriesLimit int
}

// Buckets of ReconcileDuration: few, because each is a series per CR. A
// reconcile in sync takes milliseconds, a Helm action seconds, one waiting
// on hooks or an unreachable API server up to minutes.
var durationBuckets = []float64{0.1, 1, 10, 60}

// New returns a Recorder whose collector is registered with
// opts.Registerer.
func New(opts Options) *Recorder {
	limit := opts.SeriesLimit
	if limit == 0 {
		limit = DefaultSeriesLimit
	}
	c := Register(opts.Registerer, newCollector())
	c.mu.Lock()
	c.limit = limit
	c.mu.Unlock()
	return &Recorder{kind: opts.Kind, repairName: opts.RepairAction, c: c}
}

// Register registers c, or returns the collector already registered under
// its names (several operators in one process share them).
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Record records one reconcile of the CR key.
func (r *Recorder) Record(key types.NamespacedName, o Observation) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	s := r.c.state(crKey{r.kind, key.Namespace, key.Name})
	k := r.c.kindState(r.kind)
	if o.Err != nil {
		s.errors++
		k.errors++
	} else {
		s.successes++
		k.successes++
		s.lastSuccess, s.succeeded = float64(o.At.UnixNano())/1e9, true
	}
	s.durations.observe(o.Duration.Seconds())
	k.durations.observe(o.Duration.Seconds())
	for _, a := range o.Actions {
		s.countAction(a.Name, result(a.Err))
		if a.Name == r.repairName && a.Err == nil {
			s.repairs++
			k.repairs++
		}
	}
	s.rollbacks += float64(o.UnhealthyRollbacks)
	k.rollbacks += float64(o.UnhealthyRollbacks)
	s.revision = float64(o.Revision)
	s.ready, s.drifted, s.suspended = o.Ready, o.Drifted, o.RepairSuspended
	s.failed = o.Err != nil || o.HeldBack
	s.unhealthy = float64(o.Unhealthy)
}

// Forget deletes the series of a CR that is gone.
func (r *Recorder) Forget(key types.NamespacedName) {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	delete(r.c.crs, crKey{r.kind, key.Namespace, key.Name})
}

func result(err error) string {
	if err != nil {
		return ResultError
	}
	return ResultSuccess
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Sample is the value of the sample of metric whose labels include labels,
// in a scrape: how a reader of the endpoint (a test, the scorecard) finds
// one CR's series.
func Sample(samples model.Vector, metric string, labels map[string]string) (float64, bool) {
	for _, s := range samples {
		if string(s.Metric[model.MetricNameLabel]) != metric {
			continue
		}
		match := true
		for k, v := range labels {
			if string(s.Metric[model.LabelName(k)]) != v {
				match = false
				break
			}
		}
		if match {
			return float64(s.Value), true
		}
	}
	return 0, false
}
