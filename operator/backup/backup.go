package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

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

// step advances a backup by one state and says when to look again:
// observe reads, planBackup decides, act writes.
func (r *BackupReconciler) step(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (reconcile.Result, error) {
	seen, err := r.observe(ctx, obj, spec, st)
	if err != nil {
		return reconcile.Result{}, err
	}
	return r.act(ctx, obj, spec, st, seen, planBackup(seen))
}

// backupSeen is what observe read of a backup's world.
type backupSeen struct {
	seen
	running bool
	// waited is the Backup's age, timeout its spec.waitTimeout.
	waited, timeout time.Duration
	// notSettled says why the release cannot be copied now.
	notSettled string
	// release is the source's, contents what the backup copies (with the
	// movers' users and the snapshots planned).
	release  *helmrelease.Release
	contents *Contents
}

// planBackup decides a backup's next action from what observe saw.
func planBackup(s backupSeen) plan {
	switch {
	case s.blocked != nil:
		return plan{action: actFail, why: *s.blocked}
	case s.notSettled != "" && s.waited >= s.timeout:
		return plan{action: actFail, why: problem{ReasonReleaseNotSettled, fmt.Sprintf("waited %s for the release to settle, nothing copied: %s", s.timeout, s.notSettled)}}
	case s.notSettled != "":
		return plan{action: actWait, why: problem{ReasonWaitingForRelease, s.notSettled}, requeue: min(pollPeriod*2, s.timeout-s.waited)}
	case !s.running:
		return plan{action: actStart}
	}
	return planVolumes(s.volumes, actFinish)
}

// observe reads what planBackup decides from; it writes nothing.
func (r *BackupReconciler) observe(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (backupSeen, error) {
	seen := backupSeen{running: st.Phase == api.PhaseRunning, timeout: DefaultWaitTimeout, waited: r.opts.Now().Sub(obj.GetCreationTimestamp().Time)}
	if spec.WaitTimeout != nil {
		seen.timeout = spec.WaitTimeout.Duration
	}
	if seen.running {
		return seen, r.observeRunning(ctx, obj, spec, st, &seen)
	}
	return seen, r.observePending(ctx, obj, spec, &seen)
}

// observePending reads, in order, the target, the source and its
// release, the mover image, the contents and how each claim is kept, the
// hooks' pods and the movers' users.
func (r *BackupReconciler) observePending(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, seen *backupSeen) error {
	ns := obj.GetNamespace()
	if reason, err := r.opts.checkTarget(ctx, ns, spec.Target); reason != "" {
		seen.blocked = &problem{reason, err.Error()}
		return nil
	} else if err != nil {
		return err
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(r.opts.Watched)
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: spec.Source}, cr); apierrors.IsNotFound(err) {
		seen.blocked = &problem{ReasonSourceNotFound, fmt.Sprintf("%s %s/%s does not exist", r.opts.Watched.Kind, ns, spec.Source)}
		return nil
	} else if err != nil {
		return fmt.Errorf("reading %s %s: %w", r.opts.Watched.Kind, spec.Source, err)
	}
	if seen.release, seen.notSettled = r.settled(ctx, cr); seen.notSettled != "" {
		return nil
	}
	var err error
	if seen.image, err = r.opts.moverImage(ctx); err != nil {
		seen.blocked = &problem{ReasonNoMoverImage, err.Error()}
		return nil
	}
	c, err := collect(ctx, r.opts.Reader, cr, seen.release, spec)
	if errors.Is(err, errNotSettled) {
		seen.notSettled = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	classes, reason, msg, err := r.opts.volumePlan(ctx, spec, c.Claims)
	if err != nil {
		return err
	}
	if reason != "" {
		seen.blocked = &problem{reason, msg}
		return nil
	}
	c.Security = map[string]*corev1.PodSecurityContext{}
	for _, claim := range c.Claims {
		if c.Security[claim.Name], err = OperandSecurity(ctx, r.opts.Reader, ns, claim.Name); err != nil {
			return err
		}
		if class, ok := classes[claim.Name]; ok {
			if c.Snapshots == nil {
				c.Snapshots = map[string]SnapshotRef{}
			}
			c.Snapshots[claim.Name] = SnapshotRef{Name: snapshotName(obj.GetName(), claim.Name), Class: class}
		}
	}
	seen.contents = c
	seen.hooks, err = r.opts.hookPods(ctx, ns, cr.GetName())
	return err
}

// observeRunning reads the contents, each volume's snapshot or mover pod,
// the image when a mover is missing, and the hooks' pods once all are done.
func (r *BackupReconciler) observeRunning(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus, seen *backupSeen) error {
	ns := obj.GetNamespace()
	c, err := loadContents(ctx, r.opts.Reader, ns, obj.GetName())
	if err != nil {
		seen.blocked = &problem{ReasonContentsLost, err.Error()}
		return nil
	}
	seen.contents = c
	seen.volumes = make([]volumeLook, len(st.Volumes))
	for i, v := range st.Volumes {
		switch {
		case v.Phase == api.PhaseCompleted:
		case v.Method == api.VolumeMethodSnapshot:
			var vs *snapv1.VolumeSnapshot
			if vs, err = r.opts.getSnapshot(ctx, ns, v.Snapshot); err == nil {
				seen.volumes[i] = snapshotLook(vs, v.ClaimName)
			}
		default:
			name := moverName(obj.GetName(), "backup", v.ClaimName)
			seen.volumes[i], err = r.opts.lookMover(ctx, ns, name, "copying claim "+v.ClaimName)
		}
		if err != nil {
			return err
		}
	}
	r.opts.needImage(ctx, &seen.seen, st.Volumes)
	if !slices.ContainsFunc(seen.volumes, func(l volumeLook) bool { return !l.done() }) {
		seen.hooks, err = r.opts.hookPods(ctx, ns, spec.Source)
	}
	return err
}

// act carries out a plan: the writes, the hooks and the status.
func (r *BackupReconciler) act(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus, seen backupSeen, p plan) (reconcile.Result, error) {
	for i, l := range seen.volumes {
		recordVolume(&st.Volumes[i], l, r.opts.Now().Sub(st.StartTime.Time))
	}
	switch p.action {
	case actFail:
		r.fail(obj, st, p.why.reason, p.why.message)
	case actWait:
		st.Phase, st.Reason, st.Message = api.PhasePending, p.why.reason, p.why.message
		return reconcile.Result{RequeueAfter: p.requeue}, nil
	case actStart:
		return r.begin(ctx, obj, spec, st, seen)
	case actPoll:
		for _, i := range p.create {
			if err := r.create(ctx, obj, spec, seen, st.Volumes[i]); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: pollPeriod}, nil
	case actFinish:
		if err := r.opts.runHooks(ctx, seen.hooks, postBackup, hookTimeout(spec)); err != nil {
			r.fail(obj, st, hookReason(err), err.Error())
			return reconcile.Result{}, nil
		}
		st.Size = 0
		for _, v := range st.Volumes {
			st.Size += v.Size
		}
		r.complete(obj, st, fmt.Sprintf("%d volume(s), %d bytes, and %d object(s) of release %s", len(st.Volumes), st.Size, st.Objects, spec.Source))
	}
	return reconcile.Result{}, nil
}

// begin runs the pre hooks, writes the contents, turns the backup Running
// and makes a snapshot or mover pod per claim.
func (r *BackupReconciler) begin(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus, seen backupSeen) (reconcile.Result, error) {
	if err := r.opts.runHooks(ctx, seen.hooks, preBackup, hookTimeout(spec)); err != nil {
		r.fail(obj, st, hookReason(err), err.Error())
		return reconcile.Result{}, nil
	}
	digest, err := r.writeContents(ctx, obj, seen.contents)
	if err != nil {
		return reconcile.Result{}, err
	}
	runningStatus(st, seen.contents, seen.release.Name, targetName(spec.Target), r.opts.Now())
	st.ContentsDigest = digest
	for _, v := range st.Volumes {
		if err := r.create(ctx, obj, spec, seen, v); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.opts.event(obj, corev1.EventTypeNormal, "BackupStarted", st.Message)
	return reconcile.Result{RequeueAfter: pollPeriod}, nil
}

// runningStatus is the status of a backup that starts to copy contents.
func runningStatus(st *api.BackupStatus, c *Contents, release, target string, now time.Time) {
	copies := len(c.Claims) - len(c.Snapshots)
	st.Phase, st.Reason = api.PhaseRunning, ReasonCopying
	if copies == 0 && len(c.Snapshots) > 0 {
		st.Reason = ReasonSnapshotting
	}
	st.Message = fmt.Sprintf("snapshotting %d and copying %d volume(s) of release %s to %s", len(c.Snapshots), copies, release, target)
	st.Chart, st.Revision = c.Chart+"-"+c.ChartVersion, c.Revision
	st.Objects = 1 + len(c.Secrets) + len(c.ConfigMaps) + len(c.Claims)
	st.StartTime = ptr.To(metav1.NewTime(now))
	st.Volumes = nil
	for _, claim := range c.Claims {
		v := api.VolumeResult{ClaimName: claim.Name, Phase: api.PhasePending, Method: api.VolumeMethodCopy}
		if snap, ok := c.Snapshots[claim.Name]; ok {
			v.Method, v.Snapshot = api.VolumeMethodSnapshot, snap.Name
		}
		st.Volumes = append(st.Volumes, v)
	}
}

// create makes the snapshot or the mover pod of a volume.
func (r *BackupReconciler) create(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, seen backupSeen, v api.VolumeResult) error {
	if v.Method == api.VolumeMethodSnapshot {
		return r.opts.createSnapshot(ctx, obj, v.ClaimName, seen.contents.Snapshots[v.ClaimName].Class)
	}
	return r.createMover(ctx, obj, spec, seen.image, v.ClaimName, seen.contents.security(v.ClaimName))
}

// settled returns the source's latest release when it is deployed from the
// CR's current spec, or says why not.
func (r *BackupReconciler) settled(ctx context.Context, cr *unstructured.Unstructured) (*helmrelease.Release, string) {
	st := reconciler.StatusOf(cr)
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

func (r *BackupReconciler) createMover(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, image, claim string, sec *corev1.PodSecurityContext) error {
	ns := obj.GetNamespace()
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
