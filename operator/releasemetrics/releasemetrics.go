// Package releasemetrics exports, per custom resource, how its release is
// doing: reconciles and their duration, Helm actions, the revision deployed,
// whether it is ready, drifted or failed, when it last reconciled
// successfully, drift repairs and objects not healthy.
//
// The labels are the CR's kind, namespace and name, never an object of the
// release, so the series grow with the CRs and nothing else; a CR's series
// are deleted when it is. The metric names are a contract with the alerts
// and dashboard that `chartpilot init` scaffolds and the scorecard checks:
// they import them from here.
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

// Recorder records observations into its collectors.
type Recorder struct {
	kind        string
	repairName  string
	reconciles  *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	actions     *prometheus.CounterVec
	revision    *prometheus.GaugeVec
	ready       *prometheus.GaugeVec
	drifted     *prometheus.GaugeVec
	failed      *prometheus.GaugeVec
	lastSuccess *prometheus.GaugeVec
	repairs     *prometheus.CounterVec
	unhealthy   *prometheus.GaugeVec
	rollbacks   *prometheus.CounterVec
	suspended   *prometheus.GaugeVec
}

// Options configure a Recorder.
type Options struct {
	// Kind is the CR kind the recorder is for.
	Kind string
	// RepairAction is the name of the action that repairs drift, counted
	// apart in DriftRepairs.
	RepairAction string
	// Registerer registers the collectors; a collector already registered
	// under the same name (several kinds in one process) is shared.
	Registerer prometheus.Registerer
}

// Buckets of ReconcileDuration: few, because each is a series per CR. A
// reconcile in sync takes milliseconds, a Helm action seconds, one waiting
// on hooks or an unreachable API server up to minutes.
var durationBuckets = []float64{0.1, 1, 10, 60}

// New returns a Recorder whose collectors are registered with
// opts.Registerer.
func New(opts Options) *Recorder {
	cr := []string{LabelKind, LabelNamespace, LabelName}
	with := func(extra ...string) []string { return append(append([]string(nil), cr...), extra...) }
	reg := opts.Registerer
	gauge := func(name, help string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, cr))
	}
	return &Recorder{
		kind:       opts.Kind,
		repairName: opts.RepairAction,
		reconciles: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: Reconciles, Help: "Reconciles of a custom resource's release, by result (success or error).",
		}, with(LabelResult))),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: ReconcileDuration, Help: "How long reconciles of a custom resource's release took.", Buckets: durationBuckets,
		}, cr)),
		actions: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: HelmActions, Help: "Helm actions run on a custom resource's release (install, upgrade, rollback, uninstall, unlock, repair), by result.",
		}, with(LabelAction, LabelResult))),
		revision:    gauge(Revision, "The revision of the release deployed now; 0 when none is."),
		ready:       gauge(Ready, "1 when every object of the release is ready, else 0."),
		drifted:     gauge(Drifted, "1 when the last reconcile found objects of the release changed in the cluster, else 0."),
		failed:      gauge(Failed, "1 when the last reconcile of the release failed, else 0."),
		lastSuccess: gauge(LastSuccessTimestamp, "Unix time of the last successful reconcile of the release."),
		repairs: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: DriftRepairs, Help: "Drift repairs of the release: objects deleted or edited in the cluster restored.",
		}, cr)),
		unhealthy: gauge(UnhealthyObjects, "Objects of the release (and pods of its workloads) not healthy at the last reconcile."),
		rollbacks: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: UnhealthyRollbacks, Help: "Automatic rollbacks of revisions of the release that regressed or were not healthy by their health deadline.",
		}, cr)),
		suspended: gauge(RepairSuspended, "1 while the repair of the release's drift is suspended: something else kept changing its objects; else 0."),
	}
}

// register registers c, or returns the collector already registered under
// its name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
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
	l := prometheus.Labels{LabelKind: r.kind, LabelNamespace: key.Namespace, LabelName: key.Name}
	r.reconciles.With(withLabel(l, LabelResult, result(o.Err))).Inc()
	r.duration.With(l).Observe(o.Duration.Seconds())
	for _, a := range o.Actions {
		r.actions.With(withLabel(withLabel(l, LabelAction, a.Name), LabelResult, result(a.Err))).Inc()
		if a.Name == r.repairName && a.Err == nil {
			r.repairs.With(l).Inc()
		}
	}
	// A CR seen once has every series, so an alert on a rate or an absent
	// repair has a zero to start from.
	r.repairs.With(l).Add(0)
	r.rollbacks.With(l).Add(float64(o.UnhealthyRollbacks))
	r.revision.With(l).Set(float64(o.Revision))
	r.ready.With(l).Set(bit(o.Ready))
	r.drifted.With(l).Set(bit(o.Drifted))
	r.suspended.With(l).Set(bit(o.RepairSuspended))
	r.failed.With(l).Set(bit(o.Err != nil || o.HeldBack))
	r.unhealthy.With(l).Set(float64(o.Unhealthy))
	if o.Err == nil {
		r.lastSuccess.With(l).Set(float64(o.At.UnixNano()) / 1e9)
	}
}

// Forget deletes the series of a CR that is gone.
func (r *Recorder) Forget(key types.NamespacedName) {
	l := prometheus.Labels{LabelKind: r.kind, LabelNamespace: key.Namespace, LabelName: key.Name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		r.reconciles, r.duration, r.actions, r.revision, r.ready, r.drifted, r.failed, r.lastSuccess, r.repairs, r.unhealthy, r.rollbacks, r.suspended,
	} {
		v.DeletePartialMatch(l)
	}
}

func withLabel(l prometheus.Labels, k, v string) prometheus.Labels {
	out := make(prometheus.Labels, len(l)+1)
	for lk, lv := range l {
		out[lk] = lv
	}
	out[k] = v
	return out
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
