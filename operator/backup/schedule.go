package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Reasons a schedule reports.
const (
	ReasonScheduled        = "Scheduled"
	ReasonInvalidSchedule  = "InvalidSchedule"
	ReasonSuspended        = "Suspended"
	ReasonBackupRunning    = "BackupRunning"
	ReasonMissed           = "Missed"
	ReasonLastBackupFailed = "LastBackupFailed"
)

// backupNameTime is the layout of the tick in a scheduled Backup's name:
// one name per tick, so that a run is created once however often the
// schedule is reconciled.
const backupNameTime = "20060102-150405"

// ScheduleReconciler reconciles the <Kind>BackupSchedules of one watched
// kind. At each cron tick it creates a Backup of the template, labelled
// api.ScheduleLabel with its name, unless a Backup of the same CR is still
// running (it waits, within spec.startingDeadline); after an outage it runs
// the latest missed tick once. Then it keeps the newest spec.keep
// Completed and spec.keepFailed Failed Backups of its label and deletes the
// others (their archives go through the Backup's finalizer). Deleting a
// schedule keeps its Backups.
type ScheduleReconciler struct {
	opts Options
}

// NewScheduleReconciler returns the reconciler of opts.Watched's schedules.
func NewScheduleReconciler(opts Options) *ScheduleReconciler {
	opts.defaults()
	return &ScheduleReconciler{opts: opts}
}

func (r *ScheduleReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(api.ScheduleKind(r.opts.Watched))
	// From the API server, not the cache: a status read back stale would
	// hide a run just made, or make an unchanged status look written.
	if err := r.opts.Reader.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	var spec api.ScheduleSpec
	var st api.ScheduleStatus
	if err := fromObject(obj, &spec, &st); err != nil {
		return reconcile.Result{}, err
	}
	res, err := r.step(ctx, obj, spec, &st)
	if werr := writeStatus(ctx, r.opts.Client, obj, &st); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	return res, err
}

// scheduled is one Backup a schedule created.
type scheduled struct {
	obj   *unstructured.Unstructured
	phase api.Phase
	// reason and message of a Failed one.
	reason, message string
}

// step checks the spec, then observes, plans and acts.
func (r *ScheduleReconciler) step(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, st *api.ScheduleStatus) (reconcile.Result, error) {
	sched, bad := checkSchedule(obj.GetName(), spec)
	if bad != nil {
		if bad.reason == ReasonInvalidSchedule {
			st.NextScheduleTime = nil
		}
		r.setReason(obj, st, bad.reason, bad.message)
		return reconcile.Result{}, nil
	}
	mine, running, err := r.observe(ctx, obj, spec.Template.Source)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := planSchedule(scheduleSeen{obj: obj, spec: spec, sched: sched, mine: mine, running: running, now: r.opts.Now()}, *st)
	return r.act(ctx, obj, spec, st, p)
}

// checkSchedule parses the schedule, or says why it is invalid: before
// anything is read, since the name is a label value to select by.
func checkSchedule(name string, spec api.ScheduleSpec) (cron.Schedule, *problem) {
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return nil, &problem{ReasonInvalidSpec, fmt.Sprintf("the schedule's name labels its backups: %v", errs)}
	}
	sched, err := parseCron(spec.Schedule)
	if err != nil {
		return nil, &problem{ReasonInvalidSchedule, err.Error()}
	}
	return sched, nil
}

// scheduleSeen is what a schedule is planned from: itself, its Backups
// (oldest first), the Backup of its source that has not ended, and now.
type scheduleSeen struct {
	obj     *unstructured.Unstructured
	spec    api.ScheduleSpec
	sched   cron.Schedule
	mine    []scheduled
	running string
	now     time.Time
}

// schedulePlan is what a schedule does next.
type schedulePlan struct {
	// status is the schedule's status once the plan is carried out.
	status api.ScheduleStatus
	// prune are the Backups beyond those kept, with the event of each.
	prune []pruned
	// due, when set, is the tick whose Backup to create.
	due     time.Time
	events  []problem
	requeue time.Duration
}

type pruned struct {
	obj     *unstructured.Unstructured
	message string
}

// planSchedule prunes, then runs the tick due unless the schedule is
// suspended, the tick missed its deadline or a Backup of the source runs.
func planSchedule(s scheduleSeen, st api.ScheduleStatus) schedulePlan {
	var p schedulePlan
	p.prune, st.Kept, st.LastCompleted = retention(s.spec, s.mine)
	t := nextTick(s.sched, lastRun(s.obj, &st, s.mine), s.now)
	st.NextScheduleTime = ptr.To(metav1.NewTime(t.next))
	p.requeue = t.next.Sub(s.now)
	due := t.due.UTC().Format(time.RFC3339)
	switch {
	case s.spec.Suspend:
		st.NextScheduleTime, p.requeue = nil, 0
		st.Reason, st.Message = ReasonSuspended, "spec.suspend is set: no new backups"
	case t.due.IsZero():
		st.Reason, st.Message = report(st.NextScheduleTime.Time, s.mine)
	case late(t.due, s.now, ptrDuration(s.spec.StartingDeadline)):
		st.LastScheduleTime = ptr.To(metav1.NewTime(t.due))
		st.Reason, st.Message = ReasonMissed, fmt.Sprintf("the run of %s (and %d before it) missed its starting deadline of %s: skipped", due, t.missed, s.spec.StartingDeadline.Duration)
		p.events = append(p.events, problem{ReasonMissed, st.Message})
	case s.running != "":
		st.Reason, st.Message = ReasonBackupRunning, fmt.Sprintf("the run of %s waits for backup %s of %s to end", due, s.running, s.spec.Template.Source)
		p.requeue = pollPeriod
	default:
		p.due = t.due
		st.LastScheduleTime, st.LastBackup = ptr.To(metav1.NewTime(t.due)), scheduledName(s.obj.GetName(), t.due)
		st.Reason, st.Message = ReasonScheduled, fmt.Sprintf("created backup %s for the run of %s", st.LastBackup, due)
		if t.missed > 0 {
			st.Message += fmt.Sprintf(" (%d earlier run(s) skipped: at most one catch-up)", t.missed)
		}
		p.events = append(p.events, problem{"BackupCreated", st.Message})
	}
	p.status = st
	return p
}

// act deletes the Backups pruned, creates the one due, then takes the
// planned status and tells the events.
func (r *ScheduleReconciler) act(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, st *api.ScheduleStatus, p schedulePlan) (reconcile.Result, error) {
	for _, b := range p.prune {
		err := r.opts.Client.Delete(ctx, b.obj, client.Preconditions{UID: ptr.To(b.obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			st.Kept, st.LastCompleted = p.status.Kept, p.status.LastCompleted
			err = fmt.Errorf("deleting backup %s beyond the kept ones: %w", b.obj.GetName(), err)
			r.setReason(obj, st, ReasonRetentionFailed, err.Error())
			return reconcile.Result{}, err
		}
		r.opts.event(obj, corev1.EventTypeNormal, "BackupPruned", b.message)
	}
	if !p.due.IsZero() {
		if err := r.create(ctx, obj, spec, p.due); err != nil {
			return reconcile.Result{}, err
		}
	}
	*st = p.status
	for _, e := range p.events {
		typ := corev1.EventTypeNormal
		if e.reason == ReasonMissed {
			typ = corev1.EventTypeWarning
		}
		r.opts.event(obj, typ, e.reason, e.message)
	}
	return reconcile.Result{RequeueAfter: p.requeue}, nil
}

// lastRun is the tick last run: the status says, unless a reconcile
// created a Backup and failed to write the status (its stale read
// conflicted); the newest Backup's name holds its tick too.
func lastRun(obj *unstructured.Unstructured, st *api.ScheduleStatus, mine []scheduled) time.Time {
	last := obj.GetCreationTimestamp().Time
	if st.LastScheduleTime != nil {
		last = st.LastScheduleTime.Time
	}
	for _, b := range mine {
		tick, err := time.Parse(backupNameTime, strings.TrimPrefix(b.obj.GetName(), obj.GetName()+"-"))
		if err == nil && tick.After(last) {
			last = tick
			st.LastScheduleTime, st.LastBackup = ptr.To(metav1.NewTime(tick)), b.obj.GetName()
		}
	}
	return last
}

// ReasonRetentionFailed: deleting an old backup failed.
const ReasonRetentionFailed = "RetentionFailed"

func ptrDuration(d *metav1.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	return &d.Duration
}

func (r *ScheduleReconciler) setReason(obj *unstructured.Unstructured, st *api.ScheduleStatus, reason, msg string) {
	if st.Reason != reason && (reason == ReasonInvalidSchedule || reason == ReasonInvalidSpec) {
		r.opts.event(obj, corev1.EventTypeWarning, reason, msg)
	}
	st.Reason, st.Message = reason, msg
}

// report says how the last backup went, when no run is due.
func report(next time.Time, mine []scheduled) (reason, msg string) {
	at := next.UTC().Format(time.RFC3339)
	if len(mine) == 0 {
		return ReasonScheduled, "next run at " + at
	}
	newest := mine[len(mine)-1]
	switch newest.phase {
	case api.PhaseFailed:
		return ReasonLastBackupFailed, fmt.Sprintf("backup %s failed: %s: %s", newest.obj.GetName(), newest.reason, newest.message)
	case api.PhaseCompleted:
		return ReasonScheduled, fmt.Sprintf("backup %s completed; next run at %s", newest.obj.GetName(), at)
	}
	return ReasonScheduled, fmt.Sprintf("backup %s is %s; next run at %s", newest.obj.GetName(), cmp.Or(newest.phase, api.PhasePending), at)
}

// observe lists the namespace's Backups once: the schedule's (its
// label), oldest first, and the first of its source that has not ended,
// whoever created it: two copies of one CR never run at once.
func (r *ScheduleReconciler) observe(ctx context.Context, obj *unstructured.Unstructured, source string) (mine []scheduled, running string, err error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(api.BackupKind(r.opts.Watched).GroupVersion().WithKind(api.BackupKind(r.opts.Watched).Kind + "List"))
	if err := r.opts.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil, "", fmt.Errorf("listing the backups of namespace %s: %w", obj.GetNamespace(), err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		var spec api.BackupSpec
		var st api.BackupStatus
		err := fromObject(b, &spec, &st)
		if b.GetLabels()[api.ScheduleLabel] == obj.GetName() {
			mine = append(mine, scheduled{obj: b, phase: st.Phase, reason: st.Reason, message: st.Message})
		}
		if err == nil && running == "" && spec.Source == source && !st.Phase.Done() && b.GetDeletionTimestamp() == nil {
			running = b.GetName()
		}
	}
	// The name holds the tick: it orders runs even within one second of
	// creation.
	slices.SortFunc(mine, func(a, b scheduled) int {
		return cmp.Or(a.obj.GetCreationTimestamp().Compare(b.obj.GetCreationTimestamp().Time), cmp.Compare(a.obj.GetName(), b.obj.GetName()))
	})
	return mine, running, nil
}

// retention picks the schedule's Backups beyond spec.keep Completed and
// spec.keepFailed Failed ones, oldest first (those still running stay),
// and counts those kept.
func retention(spec api.ScheduleSpec, mine []scheduled) (prune []pruned, kept int, lastCompleted string) {
	keep := map[api.Phase]int{api.PhaseCompleted: int(ptr.Deref(spec.Keep, api.DefaultKeep)), api.PhaseFailed: int(ptr.Deref(spec.KeepFailed, api.DefaultKeepFailed))}
	seen := map[api.Phase]int{}
	for i := len(mine) - 1; i >= 0; i-- {
		b := mine[i]
		if b.phase == api.PhaseCompleted && lastCompleted == "" {
			lastCompleted = b.obj.GetName()
		}
		if !b.phase.Done() || b.obj.GetDeletionTimestamp() != nil {
			kept++
			continue
		}
		if seen[b.phase]++; seen[b.phase] <= keep[b.phase] {
			kept++
			continue
		}
		prune = append(prune, pruned{obj: b.obj, message: fmt.Sprintf("deleted %s backup %s: %d %s kept", b.phase, b.obj.GetName(), keep[b.phase], b.phase)})
	}
	return prune, kept, lastCompleted
}

// create makes the Backup of the tick due; one that exists already (the
// status write of a previous reconcile failed) is the same run.
func (r *ScheduleReconciler) create(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, due time.Time) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec.Template)
	if err != nil {
		return err
	}
	b := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	b.SetGroupVersionKind(api.BackupKind(r.opts.Watched))
	b.SetNamespace(obj.GetNamespace())
	b.SetName(scheduledName(obj.GetName(), due))
	b.SetLabels(map[string]string{api.ScheduleLabel: obj.GetName()})
	if err := r.opts.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating backup %s of schedule %s: %w", b.GetName(), obj.GetName(), err)
	}
	return nil
}

// scheduledName is the name of the Backup of a schedule's tick.
func scheduledName(schedule string, due time.Time) string {
	return schedule + "-" + due.UTC().Format(backupNameTime)
}
