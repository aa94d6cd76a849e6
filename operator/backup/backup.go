package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
	"github.com/chartpilot/chartpilot/operator/reconciler"

	releasecommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Reasons a backup or a restore reports in its status and events.
const (
	ReasonSourceNotFound    = "SourceNotFound"
	ReasonTargetUnavailable = "TargetUnavailable"
	ReasonReleaseNotSettled = "ReleaseNotSettled"
	ReasonWaitingForRelease = "WaitingForRelease"
	ReasonNoMoverImage      = "NoMoverImage"
	ReasonCopying           = "Copying"
	ReasonMoverFailed       = "MoverFailed"
	ReasonHookFailed        = "HookFailed"
	// ReasonHookNotPermitted: a pod carries a hook the operator may not
	// run (it holds no pods/exec there); no hook of the phase ran.
	ReasonHookNotPermitted = "HookNotPermitted"
	ReasonCompleted        = "Completed"
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonContentsLost     = "ContentsLost"
)

// Defaults of the spec's durations.
const (
	DefaultWaitTimeout = 5 * time.Minute
	DefaultHookTimeout = 30 * time.Second
	// pollPeriod is how often a running backup or restore looks at its pods.
	pollPeriod = 2 * time.Second
)

// errNotSettled means the release is being installed or upgraded: a copy
// now could mix the old and the new.
var errNotSettled = errors.New("the release is not settled")

// BackupReconciler reconciles the <Kind>Backups of one watched kind.
//
// Pending: the source's release must be deployed with the CR's current
// spec; otherwise it waits (reason WaitingForRelease) and fails after
// spec.waitTimeout (ReleaseNotSettled). Then each claim is planned: a
// VolumeSnapshot where its CSI driver has the class (spec.volumeMethod),
// else a copy; a snapshot that cannot be taken fails the backup before
// the hooks (SnapshotClassMissing). Running: pre hooks ran, the contents
// Secret is written, one VolumeSnapshot or mover pod per claim
// (deterministic names: a restarted operator finds them again);
// Completed once every snapshot is ready and every pod succeeded and the
// post hooks ran; Failed with the reason of the first problem. Nothing the
// backup reads is changed.
type BackupReconciler struct {
	opts Options
}

// NewBackupReconciler returns the reconciler of opts.Watched's backups.
func NewBackupReconciler(opts Options) *BackupReconciler {
	opts.defaults()
	return &BackupReconciler{opts: opts}
}

func (r *BackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := r.opts.read(ctx, req.NamespacedName, api.BackupKind(r.opts.Watched))
	if err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var spec api.BackupSpec
	var st api.BackupStatus
	if err := fromObject(obj, &spec, &st); err != nil {
		return reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return r.finalize(ctx, obj, spec, &st)
	}
	// Before any archive is written: deleting the Backup deletes them.
	if controllerutil.AddFinalizer(obj, api.ArchivesFinalizer) {
		if err := r.opts.Client.Update(ctx, obj); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer of backup %s: %w", obj.GetName(), err)
		}
	}
	if st.Phase.Done() {
		return reconcile.Result{}, nil
	}
	res, err := r.step(ctx, obj, spec, &st)
	if werr := writeStatus(ctx, r.opts.Client, obj, &st); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	// Only once the status holds their results: a mover gone before that
	// would be made again and copy again.
	if st.Phase == api.PhaseCompleted {
		r.opts.deleteMoversOf(ctx, obj.GetNamespace(), api.BackupLabel, obj.GetName())
	}
	return res, err
}

// step advances a backup by one state and says when to look again.
func (r *BackupReconciler) step(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (reconcile.Result, error) {
	switch st.Phase {
	case "", api.PhasePending:
		return r.start(ctx, obj, spec, st)
	case api.PhaseRunning:
		return r.running(ctx, obj, spec, st)
	}
	return reconcile.Result{}, nil
}

// start checks the spec, the target and the release, then runs the pre
// hooks, writes the contents and turns Running.
func (r *BackupReconciler) start(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (reconcile.Result, error) {
	ns := obj.GetNamespace()
	if why, err := r.opts.checkTarget(ctx, ns, spec.Target); err != nil || why != "" {
		if why != "" {
			r.fail(obj, st, why, err.Error())
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(r.opts.Watched)
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: spec.Source}, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(obj, st, ReasonSourceNotFound, fmt.Sprintf("%s %s/%s does not exist", r.opts.Watched.Kind, ns, spec.Source))
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading %s %s: %w", r.opts.Watched.Kind, spec.Source, err)
	}
	rel, why := r.settled(ctx, cr)
	if why != "" {
		return r.wait(obj, spec, st, why), nil
	}
	image, err := r.opts.moverImage(ctx)
	if err != nil {
		r.fail(obj, st, ReasonNoMoverImage, err.Error())
		return reconcile.Result{}, nil
	}
	contents, err := collect(ctx, r.opts.Reader, cr, rel, spec)
	if errors.Is(err, errNotSettled) {
		return r.wait(obj, spec, st, err.Error()), nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// Before the hooks: a backup that cannot be taken quiesces nothing.
	plan, reason, msg, err := r.opts.volumePlan(ctx, spec, contents.Claims)
	if err != nil {
		return reconcile.Result{}, err
	}
	if reason != "" {
		r.fail(obj, st, reason, msg)
		return reconcile.Result{}, nil
	}
	hooks, err := r.opts.hookPods(ctx, ns, cr.GetName())
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.opts.runHooks(ctx, hooks, preBackup, hookTimeout(spec)); err != nil {
		r.fail(obj, st, hookReason(err), err.Error())
		return reconcile.Result{}, nil
	}
	contents.Security = map[string]*corev1.PodSecurityContext{}
	for _, c := range contents.Claims {
		if contents.Security[c.Name], err = operandSecurity(ctx, r.opts.Reader, ns, c.Name); err != nil {
			return reconcile.Result{}, err
		}
		if class, ok := plan[c.Name]; ok {
			if contents.Snapshots == nil {
				contents.Snapshots = map[string]SnapshotRef{}
			}
			contents.Snapshots[c.Name] = SnapshotRef{Name: snapshotName(obj.GetName(), c.Name), Class: class}
		}
	}
	digest, err := r.writeContents(ctx, obj, contents)
	if err != nil {
		return reconcile.Result{}, err
	}
	st.ContentsDigest = digest
	copies := len(contents.Claims) - len(contents.Snapshots)
	st.Phase, st.Reason = api.PhaseRunning, ReasonCopying
	if copies == 0 && len(contents.Snapshots) > 0 {
		st.Reason = ReasonSnapshotting
	}
	st.Message = fmt.Sprintf("snapshotting %d and copying %d volume(s) of release %s to %s", len(contents.Snapshots), copies, rel.Name, targetName(spec.Target))
	st.Chart, st.Revision = contents.Chart+"-"+contents.ChartVersion, contents.Revision
	st.Objects = 1 + len(contents.Secrets) + len(contents.ConfigMaps) + len(contents.Claims)
	st.StartTime = ptr.To(metav1.NewTime(r.opts.Now()))
	st.Volumes = nil
	for _, c := range contents.Claims {
		v := api.VolumeResult{ClaimName: c.Name, Phase: api.PhasePending, Method: api.VolumeMethodCopy}
		if snap, ok := contents.Snapshots[c.Name]; ok {
			v.Method, v.Snapshot = api.VolumeMethodSnapshot, snap.Name
		}
		st.Volumes = append(st.Volumes, v)
	}
	for _, c := range contents.Claims {
		if snap, ok := contents.Snapshots[c.Name]; ok {
			err = r.opts.createSnapshot(ctx, obj, c.Name, snap.Class)
		} else {
			err = r.createMover(ctx, obj, spec, image, c.Name)
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	r.opts.event(obj, corev1.EventTypeNormal, "BackupStarted", st.Message)
	return reconcile.Result{RequeueAfter: pollPeriod}, nil
}

// settled returns the source's latest release when it is deployed from the
// CR's current spec, or says why not.
func (r *BackupReconciler) settled(ctx context.Context, cr *unstructured.Unstructured) (*helmrelease.Release, string) {
	var st reconciler.Status
	if m, ok := cr.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
	}
	deployed := meta.FindStatusCondition(st.Conditions, reconciler.TypeDeployed)
	switch {
	case deployed == nil || deployed.Status != metav1.ConditionTrue:
		return nil, fmt.Sprintf("%s %s is not Deployed", cr.GetKind(), cr.GetName())
	case deployed.ObservedGeneration < cr.GetGeneration():
		return nil, fmt.Sprintf("%s %s changed (generation %d) since its release was deployed (generation %d): an upgrade is due", cr.GetKind(), cr.GetName(), cr.GetGeneration(), deployed.ObservedGeneration)
	}
	rel, err := r.opts.Releases.Latest(ctx, cr.GetNamespace(), cr.GetName())
	if err != nil {
		return nil, err.Error()
	}
	if rel.Info == nil || rel.Info.Status != releasecommon.StatusDeployed {
		status := "unknown"
		if rel.Info != nil {
			status = rel.Info.Status.String()
		}
		return nil, fmt.Sprintf("release %s revision %d is %s", rel.Name, rel.Version, status)
	}
	return rel, ""
}

// wait keeps a backup Pending while the release settles, and fails it
// once spec.waitTimeout has passed since the Backup was created.
func (r *BackupReconciler) wait(obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus, why string) reconcile.Result {
	timeout := DefaultWaitTimeout
	if spec.WaitTimeout != nil {
		timeout = spec.WaitTimeout.Duration
	}
	waited := r.opts.Now().Sub(obj.GetCreationTimestamp().Time)
	if waited >= timeout {
		r.fail(obj, st, ReasonReleaseNotSettled, fmt.Sprintf("waited %s for the release to settle, nothing copied: %s", timeout, why))
		return reconcile.Result{}
	}
	st.Phase, st.Reason, st.Message = api.PhasePending, ReasonWaitingForRelease, why
	return reconcile.Result{RequeueAfter: min(pollPeriod*2, timeout-waited)}
}

func hookTimeout(spec api.BackupSpec) time.Duration {
	if spec.HookTimeout != nil {
		return spec.HookTimeout.Duration
	}
	return DefaultHookTimeout
}

// writeContents creates the Backup's contents Secret, owned by it, or
// replaces one a previous attempt left, and returns the digest of what it
// wrote: computed from the bytes sent, never read back, so that an edit of
// the Secret cannot become the recorded truth.
func (r *BackupReconciler) writeContents(ctx context.Context, obj *unstructured.Unstructured, c *Contents) (string, error) {
	data, err := encodeContents(c)
	if err != nil {
		return "", fmt.Errorf("encoding the contents of backup %s: %w", obj.GetName(), err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: contentsSecretName(obj.GetName()), Namespace: obj.GetNamespace(),
			Labels:          map[string]string{api.BackupLabel: obj.GetName()},
			OwnerReferences: []metav1.OwnerReference{ownerRef(obj)},
		},
		Type: ContentsSecretType,
		Data: map[string][]byte{contentsKey: data},
	}
	err = r.opts.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = r.opts.Client.Update(ctx, s)
	}
	if err != nil {
		return "", fmt.Errorf("writing Secret %s with the contents of backup %s: %w", s.Name, obj.GetName(), err)
	}
	return contentsDigest(data), nil
}

// ContentsSecretType is the type of the Secrets holding backups' contents.
const ContentsSecretType corev1.SecretType = "backup.chartpilot.io/contents"

// moverName is the deterministic name of the mover pod of a claim.
func moverName(owner, kind, claim string) string { return shorten(owner, kind, claim) }

func (r *BackupReconciler) createMover(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, image, claim string) error {
	ns := obj.GetNamespace()
	sec, err := operandSecurity(ctx, r.opts.Reader, ns, claim)
	if err != nil {
		return err
	}
	where, flags := archiveLocation(spec.Target, ns, obj.GetName(), claim)
	var s3Secret string
	if spec.Target.S3 != nil {
		s3Secret = spec.Target.S3.CredentialsSecret
	}
	pod := moverPod(moverSpec{
		name: moverName(obj.GetName(), "backup", claim), namespace: ns, image: image,
		labels: map[string]string{api.BackupLabel: obj.GetName(), api.ClaimLabel: claim, moverLabel: "backup"},
		owner:  ownerRef(obj),
		args:   append([]string{"backup", "--from", sourceMount, "--to", where}, flags...),
		source: claim, sourceRO: true, archive: targetClaim(spec.Target),
		security: sec, s3Secret: s3Secret,
	})
	if err := r.opts.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mover pod %s for claim %s: %w", pod.Name, claim, err)
	}
	return nil
}

// running looks at the mover pods: a missing one (an operator restarted
// before it created it) is created, a failed one fails the backup, and
// when all succeeded the post hooks run and the backup completes.
func (r *BackupReconciler) running(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (reconcile.Result, error) {
	ns := obj.GetNamespace()
	contents, err := loadContents(ctx, r.opts.Reader, ns, obj.GetName())
	if err != nil {
		r.fail(obj, st, ReasonContentsLost, err.Error())
		return reconcile.Result{}, nil
	}
	pending := 0
	for i := range st.Volumes {
		v := &st.Volumes[i]
		if v.Phase == api.PhaseCompleted {
			continue
		}
		if v.Method == api.VolumeMethodSnapshot {
			step, err := r.opts.stepSnapshot(ctx, obj, v, contents.Snapshots[v.ClaimName].Class, st.StartTime.Time)
			if err != nil {
				return reconcile.Result{}, err
			}
			if step.reason != "" {
				r.fail(obj, st, step.reason, step.message)
				return reconcile.Result{}, nil
			}
			if step.pending {
				pending++
			}
			continue
		}
		name := moverName(obj.GetName(), "backup", v.ClaimName)
		step, err := r.opts.stepMover(ctx, ns, name, "copying claim "+v.ClaimName, v, func(image string) error {
			return r.createMover(ctx, obj, spec, image, v.ClaimName)
		})
		if err != nil {
			return reconcile.Result{}, err
		}
		if step.reason != "" {
			r.fail(obj, st, step.reason, step.message)
			return reconcile.Result{}, nil
		}
		if step.pending {
			pending++
		} else if v.Phase == api.PhaseCompleted {
			v.Duration = r.opts.Now().Sub(st.StartTime.Time).Round(100 * time.Millisecond).String()
		}
	}
	if pending > 0 {
		return reconcile.Result{RequeueAfter: pollPeriod}, nil
	}
	hooks, err := r.opts.hookPods(ctx, ns, spec.Source)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.opts.runHooks(ctx, hooks, postBackup, hookTimeout(spec)); err != nil {
		r.fail(obj, st, hookReason(err), err.Error())
		return reconcile.Result{}, nil
	}
	st.Size = 0
	for _, v := range st.Volumes {
		st.Size += v.Size
	}
	r.complete(obj, st, fmt.Sprintf("%d volume(s), %d bytes, and %d object(s) of release %s", len(st.Volumes), st.Size, st.Objects, spec.Source))
	return reconcile.Result{}, nil
}

// moverMessage is a mover's result error, or its raw termination message.
func moverMessage(msg string) string {
	if res, err := mover.ParseResult(msg); err == nil && res.Error != "" {
		return res.Error
	}
	return msg
}

// deleteMoversOf deletes the finished mover pods of a backup or restore;
// a failure is only logged (they are owned and go with their owner).
func (o *Options) deleteMoversOf(ctx context.Context, ns, label, name string) {
	err := o.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{label: name})
	if err != nil {
		o.Log.Error(err, "deleting the mover pods", "namespace", ns, label, name)
	}
}

func (r *BackupReconciler) fail(obj *unstructured.Unstructured, st *api.BackupStatus, reason, msg string) {
	st.Phase, st.Reason, st.Message = api.PhaseFailed, reason, msg
	st.CompletionTime = ptr.To(metav1.NewTime(r.opts.Now()))
	st.Duration = elapsed(st.StartTime, st.CompletionTime)
	r.opts.event(obj, corev1.EventTypeWarning, "BackupFailed", reason+": "+msg)
}

func (r *BackupReconciler) complete(obj *unstructured.Unstructured, st *api.BackupStatus, msg string) {
	st.Phase, st.Reason, st.Message = api.PhaseCompleted, ReasonCompleted, msg
	st.CompletionTime = ptr.To(metav1.NewTime(r.opts.Now()))
	st.Duration = elapsed(st.StartTime, st.CompletionTime)
	r.opts.event(obj, corev1.EventTypeNormal, "BackupCompleted", msg+" in "+st.Duration)
}

func elapsed(from, to *metav1.Time) string {
	if from == nil || to == nil {
		return ""
	}
	return to.Sub(from.Time).Round(100 * time.Millisecond).String()
}
