package backup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// step prunes, then runs the tick due, and says when to look again.
func (r *ScheduleReconciler) step(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, st *api.ScheduleStatus) (reconcile.Result, error) {
	if errs := validation.IsValidLabelValue(obj.GetName()); len(errs) > 0 {
		r.setReason(obj, st, ReasonInvalidSpec, fmt.Sprintf("the schedule's name labels its backups: %v", errs))
		return reconcile.Result{}, nil
	}
	sched, err := parseCron(spec.Schedule)
	if err != nil {
		st.NextScheduleTime = nil
		r.setReason(obj, st, ReasonInvalidSchedule, err.Error())
		return reconcile.Result{}, nil
	}
	mine, err := r.backups(ctx, obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.prune(ctx, obj, spec, st, mine); err != nil {
		r.setReason(obj, st, ReasonRetentionFailed, err.Error())
		return reconcile.Result{}, err
	}
	now := r.opts.Now()
	t := nextTick(sched, lastRun(obj, st, mine), now)
	st.NextScheduleTime = ptr.To(metav1.NewTime(t.next))
	wake := reconcile.Result{RequeueAfter: t.next.Sub(now)}
	switch {
	case spec.Suspend:
		st.NextScheduleTime = nil
		r.setReason(obj, st, ReasonSuspended, "spec.suspend is set: no new backups")
		return reconcile.Result{}, nil
	case t.due.IsZero():
		r.report(obj, st, mine)
		return wake, nil
	case late(t.due, now, ptrDuration(spec.StartingDeadline)):
		st.LastScheduleTime = ptr.To(metav1.NewTime(t.due))
		r.setReason(obj, st, ReasonMissed, fmt.Sprintf("the run of %s (and %d before it) missed its starting deadline of %s: skipped", t.due.UTC().Format(time.RFC3339), t.missed, spec.StartingDeadline.Duration))
		r.opts.event(obj, corev1.EventTypeWarning, ReasonMissed, st.Message)
		return wake, nil
	}
	running, err := r.running(ctx, obj.GetNamespace(), spec.Template.Source)
	if err != nil {
		return reconcile.Result{}, err
	}
	if running != "" {
		r.setReason(obj, st, ReasonBackupRunning, fmt.Sprintf("the run of %s waits for backup %s of %s to end", t.due.UTC().Format(time.RFC3339), running, spec.Template.Source))
		return reconcile.Result{RequeueAfter: pollPeriod}, nil
	}
	name, err := r.create(ctx, obj, spec, t.due)
	if err != nil {
		return reconcile.Result{}, err
	}
	st.LastScheduleTime, st.LastBackup = ptr.To(metav1.NewTime(t.due)), name
	msg := fmt.Sprintf("created backup %s for the run of %s", name, t.due.UTC().Format(time.RFC3339))
	if t.missed > 0 {
		msg += fmt.Sprintf(" (%d earlier run(s) skipped: at most one catch-up)", t.missed)
	}
	r.setReason(obj, st, ReasonScheduled, msg)
	r.opts.event(obj, corev1.EventTypeNormal, "BackupCreated", msg)
	return wake, nil
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
func (r *ScheduleReconciler) report(obj *unstructured.Unstructured, st *api.ScheduleStatus, mine []scheduled) {
	if len(mine) == 0 {
		r.setReason(obj, st, ReasonScheduled, "next run at "+st.NextScheduleTime.UTC().Format(time.RFC3339))
		return
	}
	newest := mine[len(mine)-1]
	switch newest.phase {
	case api.PhaseFailed:
		r.setReason(obj, st, ReasonLastBackupFailed, fmt.Sprintf("backup %s failed: %s: %s", newest.obj.GetName(), newest.reason, newest.message))
	case api.PhaseCompleted:
		r.setReason(obj, st, ReasonScheduled, fmt.Sprintf("backup %s completed; next run at %s", newest.obj.GetName(), st.NextScheduleTime.UTC().Format(time.RFC3339)))
	default:
		r.setReason(obj, st, ReasonScheduled, fmt.Sprintf("backup %s is %s; next run at %s", newest.obj.GetName(), cmp.Or(newest.phase, api.PhasePending), st.NextScheduleTime.UTC().Format(time.RFC3339)))
	}
}

// backups are the Backups of the schedule's label, oldest first.
func (r *ScheduleReconciler) backups(ctx context.Context, obj *unstructured.Unstructured) ([]scheduled, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(api.BackupKind(r.opts.Watched).GroupVersion().WithKind(api.BackupKind(r.opts.Watched).Kind + "List"))
	err := r.opts.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{api.ScheduleLabel: obj.GetName()})
	if err != nil {
		return nil, fmt.Errorf("listing the backups of schedule %s: %w", obj.GetName(), err)
	}
	var out []scheduled
	for i := range list.Items {
		b := &list.Items[i]
		var st api.BackupStatus
		if m, ok := b.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		}
		out = append(out, scheduled{obj: b, phase: st.Phase, reason: st.Reason, message: st.Message})
	}
	// The name holds the tick: it orders runs even within one second of
	// creation.
	slices.SortFunc(out, func(a, b scheduled) int {
		return cmp.Or(a.obj.GetCreationTimestamp().Compare(b.obj.GetCreationTimestamp().Time), cmp.Compare(a.obj.GetName(), b.obj.GetName()))
	})
	return out, nil
}

// prune deletes the schedule's Backups beyond spec.keep Completed and
// spec.keepFailed Failed ones, oldest first; those still running stay.
func (r *ScheduleReconciler) prune(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, st *api.ScheduleStatus, mine []scheduled) error {
	keep := map[api.Phase]int{api.PhaseCompleted: int(ptr.Deref(spec.Keep, api.DefaultKeep)), api.PhaseFailed: int(ptr.Deref(spec.KeepFailed, api.DefaultKeepFailed))}
	seen := map[api.Phase]int{}
	st.Kept, st.LastCompleted = 0, ""
	for i := len(mine) - 1; i >= 0; i-- {
		b := mine[i]
		if b.phase == api.PhaseCompleted && st.LastCompleted == "" {
			st.LastCompleted = b.obj.GetName()
		}
		if !b.phase.Done() || b.obj.GetDeletionTimestamp() != nil {
			st.Kept++
			continue
		}
		if seen[b.phase]++; seen[b.phase] <= keep[b.phase] {
			st.Kept++
			continue
		}
		err := r.opts.Client.Delete(ctx, b.obj, client.Preconditions{UID: ptr.To(b.obj.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting backup %s beyond the kept ones: %w", b.obj.GetName(), err)
		}
		r.opts.event(obj, corev1.EventTypeNormal, "BackupPruned", fmt.Sprintf("deleted %s backup %s: %d %s kept", b.phase, b.obj.GetName(), keep[b.phase], b.phase))
	}
	return nil
}

// running names a Backup of source in the namespace that has not ended,
// whoever created it: two copies of one CR never run at once.
func (r *ScheduleReconciler) running(ctx context.Context, ns, source string) (string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(api.BackupKind(r.opts.Watched).GroupVersion().WithKind(api.BackupKind(r.opts.Watched).Kind + "List"))
	if err := r.opts.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("listing the backups of namespace %s: %w", ns, err)
	}
	for _, b := range list.Items {
		var spec api.BackupSpec
		var st api.BackupStatus
		if err := fromObject(&b, &spec, &st); err != nil {
			continue
		}
		if spec.Source == source && !st.Phase.Done() && b.GetDeletionTimestamp() == nil {
			return b.GetName(), nil
		}
	}
	return "", nil
}

// create makes the Backup of the tick due; one that exists already (the
// status write of a previous reconcile failed) is the same run.
func (r *ScheduleReconciler) create(ctx context.Context, obj *unstructured.Unstructured, spec api.ScheduleSpec, due time.Time) (string, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec.Template)
	if err != nil {
		return "", err
	}
	b := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	b.SetGroupVersionKind(api.BackupKind(r.opts.Watched))
	b.SetNamespace(obj.GetNamespace())
	b.SetName(scheduledName(obj.GetName(), due))
	b.SetLabels(map[string]string{api.ScheduleLabel: obj.GetName()})
	if err := r.opts.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating backup %s of schedule %s: %w", b.GetName(), obj.GetName(), err)
	}
	return b.GetName(), nil
}

// scheduledName is the name of the Backup of a schedule's tick.
func scheduledName(schedule string, due time.Time) string {
	return schedule + "-" + due.UTC().Format(backupNameTime)
}
