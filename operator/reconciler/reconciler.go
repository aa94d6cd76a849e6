package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/health"
	"github.com/chartpilot/chartpilot/operator/release"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// Finalizers and annotations of operator-sdk's Helm operator.
const (
	Finalizer       = "helm.sdk.operatorframework.io/uninstall-release"
	LegacyFinalizer = "uninstall-helm-release"

	annotationPrefix           = "helm.sdk.operatorframework.io/"
	AnnotationUpgradeForce     = annotationPrefix + "upgrade-force"
	AnnotationRollbackForce    = annotationPrefix + "rollback-force"
	AnnotationUninstallWait    = annotationPrefix + "uninstall-wait"
	AnnotationReconcilePeriod  = annotationPrefix + "reconcile-period"
	AnnotationInstallNoHooks   = annotationPrefix + "install-disable-hooks"
	AnnotationUpgradeNoHooks   = annotationPrefix + "upgrade-disable-hooks"
	AnnotationUninstallNoHooks = annotationPrefix + "uninstall-disable-hooks"
	AnnotationPaused           = annotationPrefix + "pause-reconcile"
)

// AnnotationHealthDeadline on a CR overrides its watch's healthDeadline (a
// Go duration; "0s" turns the health gate off for the CR).
const AnnotationHealthDeadline = "chartpilot/health-deadline"

// staleRequeue is how soon a reconcile that read a CR from before this
// reconciler's last write to it looks again: the cache is milliseconds
// behind.
const staleRequeue = 100 * time.Millisecond

// notReadyRequeue re-checks readiness while objects are getting ready, in
// case no watch event comes (dependent watches disabled).
const notReadyRequeue = 15 * time.Second

// Options configure a Reconciler.
type Options struct {
	// Watch is the watches.yaml entry: kind, chart, overrides, period.
	Watch watches.Watch
	// Client reads and writes CRs (the manager's, reading from its cache).
	Client client.Client
	// APIReader reads CRs from the API server, for retries after a conflict
	// (the cache may not have caught up). Defaults to Client.
	APIReader client.Reader
	// Helm acts on releases.
	Helm *release.Client
	// Recorder emits events on CRs.
	Recorder record.EventRecorder
	// ReconcilePeriod is the default period when neither the watch nor the
	// CR's annotation sets one; 0 means none.
	ReconcilePeriod time.Duration
	// Log is the base logger.
	Log logr.Logger
	// OnDeployed is called with the digest and the kinds of objects of
	// each release in sync, to watch the kinds it creates.
	OnDeployed func(ctx context.Context, digest string, kinds []schema.GroupVersionKind)
	// Metrics, when set, records each reconcile's state and actions.
	Metrics Metrics
	// Releases, when set, records each reconcile per CR (package
	// releasemetrics).
	Releases ReleaseRecorder
	// Backoff spaces the attempts of a release that keeps failing.
	Backoff Backoff
	// DriftLimit stops drift repair of a release whose objects keep
	// drifting (another controller edits them).
	DriftLimit DriftLimit
	// Outage logs the API server's absence once for every CR (see Outage);
	// nil makes one for this reconciler alone.
	Outage *Outage
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
	// Labels are put on every object of every release (not on pod
	// templates: a change would roll the pods) and on its records, and are
	// part of its digest: a shard's operator labels what it manages with
	// its shard, so that its caches hold only that, and a CR moved to
	// another shard is upgraded once to carry the new shard's label.
	Labels map[string]string
}

// Metrics records what reconciles did.
type Metrics interface {
	// Observe records the state a CR's release was left in and the actions run.
	Observe(key types.NamespacedName, state string, actions []release.Performed)
	// Forget drops a CR that is gone.
	Forget(key types.NamespacedName)
}

// ReleaseRecorder records reconciles per CR; *releasemetrics.Recorder is one.
type ReleaseRecorder interface {
	Record(key types.NamespacedName, o releasemetrics.Observation)
	Forget(key types.NamespacedName)
}

// Reconciler reconciles the CRs of one kind.
type Reconciler struct {
	opts Options
	// mapping makes a CR's release request (newRequest).
	mapping    requestMapping
	driftLimit DriftLimit
	// memory is what the reconciler remembers of each CR between reconciles.
	memory memory
}

// New returns a Reconciler.
func New(opts Options) *Reconciler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Outage == nil {
		opts.Outage = NewOutage(opts.Log)
	}
	r := &Reconciler{opts: opts, driftLimit: opts.DriftLimit.withDefaults()}
	r.mapping = requestMapping{
		watch:       opts.Watch,
		chartDigest: release.ChartDigest(opts.Watch.LoadedChart),
		chartScales: autoscale.ChartOwns(opts.Watch.LoadedChart),
		labels:      opts.Labels,
		mapper:      r.mapper(),
	}
	return r
}

// pass is one reconcile of a CR under way: the CR, its status as read and
// the one being made, and the attempt it makes (see failure).
type pass struct {
	obj        *unstructured.Unstructured
	key        types.NamespacedName
	gen        int64
	before, st Status
	began      time.Time
	attempt    string
	log        logr.Logger
}

// Reconcile implements reconcile.Reconciler: read the CR, let it through,
// uninstall it when deleted or hold on to it with the finalizer, map it to
// its release request, wait when it must (its first pass, a backoff), let
// package release act, and report the outcome. See package release for
// the contract: errors are retried with the controller's backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	began := r.opts.Now()
	obj, err := r.fetch(ctx, req.NamespacedName)
	if obj == nil {
		return reconcile.Result{}, err
	}
	if res, ok := r.admit(obj); !ok {
		return res, nil
	}
	relReq, valuesErr := r.mapping.newRequest(obj)
	r.logIgnoredAnnotations(obj)
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.finalize(ctx, obj, relReq)
	}
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return reconcile.Result{}, err
	}
	p := r.begin(obj, began)
	if valuesErr != nil {
		return r.invalidValues(ctx, p, valuesErr)
	}
	p.attempt = attemptKey(relReq.Digest(), obj.GetAnnotations())
	if res, held := r.hold(p, relReq.Digest()); held {
		return res, nil
	}
	p.st.set(p.gen, TypeIrreconcilable, metav1.ConditionFalse, ReasonReconcileSuccessful, "")
	res, rerr := r.act(ctx, p, relReq)
	if rerr != nil {
		return r.failed(ctx, p, res, rerr)
	}
	return r.succeeded(ctx, p, res)
}

// fetch reads the CR from the cache; a CR that is gone is forgotten, and
// fetch returns nil for it.
func (r *Reconciler) fetch(ctx context.Context, key types.NamespacedName) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(r.opts.Watch.GroupVersionKind())
	if err := r.opts.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return nil, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// forget drops everything the reconciler and its metrics hold of a CR that
// is gone or whose release was uninstalled.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.memory.forget(key)
	if r.opts.Metrics != nil {
		r.opts.Metrics.Forget(key)
	}
	if r.opts.Releases != nil {
		r.opts.Releases.Forget(key)
	}
}

// admit lets through a CR to reconcile now: not a copy this reconciler
// already wrote over, selected by the watch, not paused (unless deleted).
func (r *Reconciler) admit(obj *unstructured.Unstructured) (reconcile.Result, bool) {
	var stale bool
	r.memory.with(client.ObjectKeyFromObject(obj), func(s *crState) { stale = s.stale(obj.GetResourceVersion()) })
	switch {
	case stale:
		// The cache has yet to show this reconciler's last write: look
		// again once it does (a status write queues no event).
		return reconcile.Result{RequeueAfter: staleRequeue}, false
	case !r.opts.Watch.LabelSelector.Matches(labels.Set(obj.GetLabels())):
		return reconcile.Result{}, false
	case isTrue(obj.GetAnnotations()[AnnotationPaused]) && obj.GetDeletionTimestamp() == nil:
		r.logFor(obj).V(1).Info("reconcile paused by annotation")
		return reconcile.Result{}, false
	}
	return reconcile.Result{}, true
}

// ensureFinalizer adds the finalizer that lets the release be uninstalled
// before the CR goes.
func (r *Reconciler) ensureFinalizer(ctx context.Context, obj *unstructured.Unstructured) error {
	if controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	controllerutil.AddFinalizer(obj, Finalizer)
	from := obj.GetResourceVersion()
	if err := r.opts.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	r.memory.with(client.ObjectKeyFromObject(obj), func(s *crState) { s.wrote(from, obj.GetResourceVersion()) })
	return nil
}

// begin starts the status this reconcile makes from the CR's.
func (r *Reconciler) begin(obj *unstructured.Unstructured, began time.Time) *pass {
	p := &pass{obj: obj, key: client.ObjectKeyFromObject(obj), gen: obj.GetGeneration(), began: began, log: r.logFor(obj)}
	p.before = StatusOf(obj)
	p.st = p.before
	p.st.Conditions = append([]metav1.Condition(nil), p.before.Conditions...)
	p.st.set(p.gen, TypeInitialized, metav1.ConditionTrue, "Initialized", "")
	return p
}

// invalidValues reports a spec whose values the chart cannot take.
// Retrying cannot help: the CR waits for its spec to change.
func (r *Reconciler) invalidValues(ctx context.Context, p *pass, err error) (reconcile.Result, error) {
	p.st.set(p.gen, TypeIrreconcilable, metav1.ConditionTrue, ReasonInvalidValues, err.Error())
	p.st.set(p.gen, TypeReleaseFailed, metav1.ConditionTrue, ReasonReconcileError, err.Error())
	p.st.ObservedGeneration = p.gen
	r.event(p.obj, corev1.EventTypeWarning, ReasonInvalidValues, err.Error())
	r.record(p.key, p.began, p.st, release.Result{}, err)
	return reconcile.Result{}, r.writeStatus(ctx, p.obj, p.before, p.st)
}

// hold says whether the CR waits instead: its first reconcile in this
// process when its status says it is settled as asked (see firstpass.go), or
// a backoff after this attempt failed a moment ago.
func (r *Reconciler) hold(p *pass, digest string) (reconcile.Result, bool) {
	var first bool
	r.memory.with(p.key, func(s *crState) { first = s.first() })
	if first && settled(p.before, p.gen, digest) {
		p.log.V(1).Info("settled as asked: checked later, after the CRs that changed")
		return reconcile.Result{RequeueAfter: firstPassWait()}, true
	}
	var wait time.Duration
	r.memory.with(p.key, func(s *crState) { wait = s.failure.wait(p.attempt, r.opts.Now()) })
	if wait > 0 {
		// The same attempt failed a moment ago: an event of the release's
		// objects does not make it worth repeating before its time.
		p.log.V(1).Info("backing off after a failure", "retryIn", wait.Round(time.Millisecond))
		return reconcile.Result{RequeueAfter: wait}, true
	}
	return reconcile.Result{}, false
}

// act lets package release bring the release in line with the request
// (leaving drift alone once repair is suspended), and reports its actions
// as events and metrics.
func (r *Reconciler) act(ctx context.Context, p *pass, relReq *release.Request) (release.Result, error) {
	r.memory.with(p.key, func(s *crState) {
		relReq.LeaveDrift = s.drift.isSuspended(r.driftLimit, p.attempt, r.opts.Now())
	})
	res, err := r.opts.Helm.Reconcile(ctx, relReq)
	if err == nil || !unreachable(err) {
		r.opts.Outage.Reached()
	}
	r.report(p.obj, res)
	if r.opts.Metrics != nil {
		state := string(res.State.Status)
		if err != nil {
			state = string(release.Failed)
		}
		r.opts.Metrics.Observe(p.key, state, res.Actions)
	}
	return res, err
}

// succeeded records a settled release: its failures are over, its kinds
// watched, and the status says what is deployed, whether it was held back
// (Rejected), drifted, ready and healthy.
func (r *Reconciler) succeeded(ctx context.Context, p *pass, res release.Result) (reconcile.Result, error) {
	r.memory.with(p.key, func(s *crState) { s.failure = failure{} })
	deployed := res.State.Deployed
	if r.opts.OnDeployed != nil {
		r.opts.OnDeployed(ctx, deployed.Labels[release.DigestLabel], res.State.Kinds)
	}
	gen := p.gen
	if res.State.Status == release.Rejected {
		// The last healthy revision runs; the request does not, and will
		// not until the CR's spec or the chart changes.
		p.st.set(gen, TypeReleaseFailed, metav1.ConditionTrue, ReasonUpgradeUnhealthy, res.State.Reason)
	} else {
		p.st.set(gen, TypeReleaseFailed, metav1.ConditionFalse, ReasonReconcileSuccessful, "")
	}
	p.st.setDeployed(gen, deployed)
	r.setDrifted(p, res)
	if len(res.State.NotReady) > 0 {
		p.st.set(gen, TypeReady, metav1.ConditionFalse, ReasonObjectsNotReady, strings.Join(res.State.NotReady, "; "))
	} else {
		p.st.set(gen, TypeReady, metav1.ConditionTrue, ReasonObjectsReady, "")
	}
	p.st.Health = health.Summarize(res.State.Problems)
	r.reportHealth(p.obj, p.before.Health, p.st.Health)
	p.st.ObservedGeneration = gen
	r.record(p.key, p.began, p.st, res, nil)
	if err := r.writeStatus(ctx, p.obj, p.before, p.st); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.requeue(p.obj, res)}, nil
}

func (r *Reconciler) logFor(obj *unstructured.Unstructured) logr.Logger {
	return r.opts.Log.WithValues("name", obj.GetName(), "namespace", obj.GetNamespace())
}

// setDrifted sets the Drifted condition: drift left alone past the limit
// (with a Warning event when that starts), the last repair (and how many
// came within the limit's window), or none.
func (r *Reconciler) setDrifted(p *pass, res release.Result) {
	switch prev := meta.FindStatusCondition(p.before.Conditions, TypeDrifted); {
	case res.State.Status == release.Drifted:
		msg := fmt.Sprintf("%s; repair suspended after %s: something else keeps changing the release's objects; change the spec or an annotation of this resource to resume", res.State.Reason, r.driftLimit)
		p.st.set(p.gen, TypeDrifted, metav1.ConditionTrue, ReasonRepairSuspended, msg)
		if prev == nil || prev.Reason != ReasonRepairSuspended {
			r.event(p.obj, corev1.EventTypeWarning, ReasonRepairSuspended, msg)
		}
	case performed(res, release.ActionRepair):
		msg := "objects changed in the cluster were restored: " + driftSummary(res)
		var n int
		r.memory.with(p.key, func(s *crState) { n = s.drift.repaired(r.driftLimit, p.attempt, r.opts.Now()) })
		if n > 1 {
			msg += fmt.Sprintf(" (repair %d within %s; repair stops after %d)", n, r.driftLimit.Window, r.driftLimit.Repairs)
		}
		p.st.set(p.gen, TypeDrifted, metav1.ConditionFalse, ReasonDriftRepaired, msg)
	case prev != nil && prev.Reason == ReasonDriftRepaired && !res.Changed():
		// Keep the last repair on record until the release changes.
	default:
		p.st.set(p.gen, TypeDrifted, metav1.ConditionFalse, ReasonNoDrift, "")
	}
}

// failed records a failed reconcile: the status says what failed and which
// revision is deployed now (a rollback may have made a new one), and the
// next attempt waits for the backoff unless the CR or the chart changes.
func (r *Reconciler) failed(ctx context.Context, p *pass, res release.Result, rerr error) (reconcile.Result, error) {
	reason := failureReason(rerr)
	p.st.set(p.gen, TypeReleaseFailed, metav1.ConditionTrue, reason, rerr.Error())
	if deployed := res.State.Deployed; deployed != nil {
		p.st.setDeployed(p.gen, deployed)
	} else {
		p.st.set(p.gen, TypeDeployed, metav1.ConditionFalse, reason, rerr.Error())
		p.st.DeployedRelease = nil
	}
	p.st.ObservedGeneration = p.gen
	r.record(p.key, p.began, p.st, res, rerr)
	// An API server away is one condition of the operator, logged once
	// (see Outage); each CR's failures to reach it only at V(1).
	away := rerr
	if werr := r.writeStatus(ctx, p.obj, p.before, p.st); unreachable(werr) {
		away = werr
		p.log.V(1).Info("writing status could not reach the API server", "error", werr.Error())
	} else if werr != nil {
		p.log.Error(werr, "writing status")
	}
	var retryIn time.Duration
	r.memory.with(p.key, func(s *crState) {
		retryIn = s.failure.failed(r.opts.Backoff, p.attempt, r.opts.Now(), unreachable(rerr))
	})
	if unreachable(rerr) {
		p.log.V(1).Info("reconcile could not reach the API server", "retryIn", retryIn.Round(time.Millisecond), "error", rerr.Error())
	} else {
		p.log.Error(rerr, "reconcile failed", "retryIn", retryIn.Round(time.Millisecond))
	}
	if unreachable(away) {
		r.opts.Outage.unreachable(r.opts.Watch.Kind+" "+p.key.String(), away)
	}
	// The backoff is this reconciler's: an error would add the controller's
	// own rate limiting on top and log the failure a second time.
	return reconcile.Result{RequeueAfter: retryIn}, nil
}

func (r *Reconciler) mapper() meta.RESTMapper {
	if r.opts.Helm == nil {
		return nil
	}
	return r.opts.Helm.RESTMapper()
}

// logIgnoredAnnotations says which of the CR's annotations newRequest
// ignored: a health deadline that is not a duration, as the reconcile
// period's is.
func (r *Reconciler) logIgnoredAnnotations(obj *unstructured.Unstructured) {
	if v, ok := obj.GetAnnotations()[AnnotationHealthDeadline]; ok {
		if _, valid := parseDeadline(v); !valid {
			r.opts.Log.V(1).Info("ignoring an annotation that is not a duration", "annotation", AnnotationHealthDeadline, "value", v)
		}
	}
}

// finalize uninstalls the release of a CR being deleted, then lets it go.
func (r *Reconciler) finalize(ctx context.Context, obj *unstructured.Unstructured, req *release.Request) error {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) && !controllerutil.ContainsFinalizer(obj, LegacyFinalizer) {
		return nil
	}
	if err := r.opts.Helm.Uninstall(ctx, req); err != nil {
		before := StatusOf(obj)
		st := before
		st.Conditions = append([]metav1.Condition(nil), before.Conditions...)
		st.set(obj.GetGeneration(), TypeReleaseFailed, metav1.ConditionTrue, ReasonUninstallError, err.Error())
		if werr := r.writeStatus(ctx, obj, before, st); werr != nil {
			r.opts.Log.Error(werr, "writing status")
		}
		r.event(obj, corev1.EventTypeWarning, ReasonUninstallError, err.Error())
		return err
	}
	r.event(obj, corev1.EventTypeNormal, ReasonUninstallSuccessful, "release uninstalled")
	r.forget(client.ObjectKeyFromObject(obj))

	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		controllerutil.RemoveFinalizer(cur, Finalizer)
		controllerutil.RemoveFinalizer(cur, LegacyFinalizer)
		return client.IgnoreNotFound(r.opts.Client.Update(ctx, cur))
	})
}

// writeStatus writes st when it differs from before, retrying conflicts on a
// fresh copy of the CR.
func (r *Reconciler) writeStatus(ctx context.Context, obj *unstructured.Unstructured, before, st Status) error {
	if equality.Semantic.DeepEqual(before, st) {
		return nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	cur := obj.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur.Object["status"] = m
		from := cur.GetResourceVersion()
		err := r.opts.Client.Status().Update(ctx, cur)
		if err == nil {
			r.memory.with(client.ObjectKeyFromObject(obj), func(s *crState) { s.wrote(from, cur.GetResourceVersion()) })
		}
		if !apierrors.IsConflict(err) {
			return client.IgnoreNotFound(err)
		}
		// Read the latest from the API server and write only what this
		// reconcile changed onto it.
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(obj.GroupVersionKind())
		if gerr := r.apiReader().Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
			return client.IgnoreNotFound(gerr)
		}
		theirs := StatusOf(fresh)
		next := rebase(before, st, theirs)
		if equality.Semantic.DeepEqual(next, theirs) {
			return nil
		}
		var cerr error
		if m, cerr = runtime.DefaultUnstructuredConverter.ToUnstructured(&next); cerr != nil {
			return cerr
		}
		cur = fresh
		return err // the conflict: RetryOnConflict tries again
	})
}

func (r *Reconciler) apiReader() client.Reader {
	if r.opts.APIReader != nil {
		return r.opts.APIReader
	}
	return r.opts.Client
}

// report emits one event per action. Messages name the action and revision,
// never values: they may hold secrets.
func (r *Reconciler) report(obj *unstructured.Unstructured, res release.Result) {
	for _, a := range res.Actions {
		reason := eventReasons[a.Action]
		// A remediation says what it remediated.
		why := ""
		if a.Cause != nil {
			why = " (remediating: " + a.Cause.Error() + ")"
		}
		if errors.Is(a.Cause, release.ErrUnhealthy) && a.Err == nil {
			r.event(obj, corev1.EventTypeWarning, EventUnhealthyRolledBack, fmt.Sprintf("%s succeeded in %s%s", a.Action, a.Duration.Round(time.Millisecond), why))
			continue
		}
		if a.Err != nil {
			r.event(obj, corev1.EventTypeWarning, reason+"Failed", fmt.Sprintf("%s failed after %s%s: %v", a.Action, a.Duration.Round(time.Millisecond), why, a.Err))
			continue
		}
		msg := fmt.Sprintf("%s succeeded in %s%s", a.Action, a.Duration.Round(time.Millisecond), why)
		if len(a.Drift) > 0 {
			msg += ": restored " + strings.Join(a.Drift, "; ")
		}
		r.event(obj, corev1.EventTypeNormal, reason, msg)
	}
}

var eventReasons = map[string]string{
	release.ActionInstall:   EventInstalled,
	release.ActionUpgrade:   EventUpgraded,
	release.ActionRepair:    EventDriftRepaired,
	release.ActionUnlock:    EventUnlocked,
	release.ActionRollback:  EventRolledBack,
	release.ActionUninstall: EventUninstalled,
	release.ActionVerify:    EventHealthVerified,
}

func (r *Reconciler) event(obj *unstructured.Unstructured, typ, reason, msg string) {
	if r.opts.Recorder != nil {
		r.opts.Recorder.Event(obj, typ, reason, truncate(msg))
	}
}

// requeue is the CR's reconcile period: its annotation, else the watch's,
// else the operator's; sooner while objects are getting ready.
func (r *Reconciler) requeue(obj *unstructured.Unstructured, res release.Result) time.Duration {
	period := r.opts.ReconcilePeriod
	if p := r.opts.Watch.Period(); p > 0 {
		period = p
	}
	if v, ok := obj.GetAnnotations()[AnnotationReconcilePeriod]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			period = d
		}
	}
	if len(res.State.NotReady) > 0 && (period == 0 || period > notReadyRequeue) {
		period = notReadyRequeue
	}
	// A revision under watch is judged at its deadline: one requeue, not
	// polling; the objects' events bring any failure sooner.
	if res.State.Status == release.Watching {
		until := max(res.State.VerifyAt.Sub(r.opts.Now()), 0) + deadlineSlack
		if period == 0 || until < period {
			period = until
		}
	}
	return period
}

// deadlineSlack lets a requeue for a health deadline land after it.
const deadlineSlack = 500 * time.Millisecond

func failureReason(err error) string {
	switch {
	case errors.Is(err, release.ErrAPINotServed):
		return ReasonAPINotServed
	case errors.Is(err, release.ErrRulesNotHeld):
		return ReasonRulesNotHeld
	case errors.Is(err, release.ErrInstallFailed):
		return ReasonInstallError
	case errors.Is(err, release.ErrUpgradeFailed):
		return ReasonUpgradeError
	case errors.Is(err, release.ErrUninstallFailed):
		return ReasonUninstallError
	default:
		return ReasonReconcileError
	}
}

// successReason names how the deployed revision came about, from the
// revision itself, so that it survives a lost status write.
func successReason(version int) string {
	if version == 1 {
		return ReasonInstallSuccessful
	}
	return ReasonUpgradeSuccessful
}

// driftSummary names what the repair restored, from the state it started from.
func driftSummary(res release.Result) string {
	for _, a := range res.Actions {
		if a.Action == release.ActionRepair && len(a.Drift) > 0 {
			return strings.Join(a.Drift, "; ")
		}
	}
	return "objects of the release"
}

func performed(res release.Result, action string) bool {
	return slices.ContainsFunc(res.Actions, func(a release.Performed) bool { return a.Action == action && a.Err == nil })
}

func chartName(name, version string) string { return name + "-" + version }

func isTrue(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// record sends one reconcile's outcome to the per-CR metrics.
func (r *Reconciler) record(key types.NamespacedName, began time.Time, st Status, res release.Result, err error) {
	if r.opts.Releases == nil {
		return
	}
	now := r.opts.Now()
	o := releasemetrics.Observation{
		Duration: now.Sub(began),
		Err:      err,
		Ready:    meta.IsStatusConditionTrue(st.Conditions, TypeReady) && err == nil,
		Drifted:  res.State.Status == release.Drifted || performed(res, release.ActionRepair),
		// Drifted is the state in which repair is suspended (setDrifted).
		RepairSuspended: res.State.Status == release.Drifted,
		At:              now,
	}
	if st.DeployedRelease != nil {
		o.Revision = st.DeployedRelease.Version
	}
	if st.Health != nil {
		o.Unhealthy = st.Health.Unhealthy
	}
	for _, a := range res.Actions {
		o.Actions = append(o.Actions, releasemetrics.Action{Name: a.Action, Err: a.Err})
		if errors.Is(a.Cause, release.ErrUnhealthy) && a.Err == nil {
			o.UnhealthyRollbacks++
		}
	}
	o.HeldBack = res.State.Status == release.Rejected && err == nil
	r.opts.Releases.Record(key, o)
}

// reportHealth emits an event when the failures among the release's
// objects change: which objects fail and why, or that none does any more.
// Objects only getting ready (a rollout in progress) make no event, and
// nothing is emitted while the failures stay the same.
func (r *Reconciler) reportHealth(obj *unstructured.Unstructured, before, now *health.Summary) {
	was, is := failures(before), failures(now)
	switch {
	case slices.Equal(was, is):
	case len(is) == 0:
		r.event(obj, corev1.EventTypeNormal, ReasonObjectsHealthy, "no object of the release is failing any more")
	default:
		msgs := make([]string, 0, len(is))
		for _, p := range is {
			msgs = append(msgs, p.String())
		}
		r.event(obj, corev1.EventTypeWarning, ReasonObjectsUnhealthy, fmt.Sprintf("%d object(s) failing: %s", len(is), strings.Join(msgs, "; ")))
	}
}

// failures are the problems of a summary that are more than "not ready yet".
func failures(s *health.Summary) []health.Problem {
	if s == nil {
		return nil
	}
	var out []health.Problem
	for _, p := range s.Problems {
		if p.Reason != health.ReasonNotReady {
			out = append(out, p)
		}
	}
	return out
}
