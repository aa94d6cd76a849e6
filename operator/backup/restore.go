package backup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/reconciler"
)

// Reasons only a restore reports.
const (
	ReasonBackupNotFound     = "BackupNotFound"
	ReasonBackupNotCompleted = "BackupNotCompleted"
	ReasonAlreadyExists      = "AlreadyExists"
	ReasonRestoringVolumes   = "RestoringVolumes"
	ReasonReleaseFailed      = "ReleaseFailed"
	// ReasonContentsTampered: the contents Secret differs from the digest
	// its Backup recorded, or has none to check against a restore into
	// another namespace.
	ReasonContentsTampered = "ContentsTampered"
)

// DefaultReleaseTimeout bounds how long a restore waits for the restored
// CR's release to be deployed.
const DefaultReleaseTimeout = 5 * time.Minute

// Helm's ownership metadata: a release adopts an existing object that
// carries them with its name and namespace.
const (
	helmManagedBy        = "app.kubernetes.io/managed-by"
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// RestoreReconciler reconciles the <Kind>Restores of one watched kind.
//
// It checks first, changing nothing: the Backup is Completed, and nothing
// it would create exists (unless spec.overwrite): the CR, its claims,
// Secrets and ConfigMaps (reason AlreadyExists), and the backup's
// VolumeSnapshots are ready (SnapshotNotFound). Running: the Secrets,
// ConfigMaps and claims are created with Helm's ownership metadata for the
// restored release, mover pods refill the copied claims, the snapshot
// claims are made from their snapshots (through a copy bound to the same
// handle in another namespace), then the CR is created;
// Completed once its release is Deployed and Ready and the post-restore
// hooks ran.
type RestoreReconciler struct {
	opts Options
}

// NewRestoreReconciler returns the reconciler of opts.Watched's restores.
func NewRestoreReconciler(opts Options) *RestoreReconciler {
	opts.defaults()
	return &RestoreReconciler{opts: opts}
}

// restoreRun is one restore's world.
type restoreRun struct {
	obj      *unstructured.Unstructured
	spec     api.RestoreSpec
	st       *api.RestoreStatus
	backup   api.BackupSpec
	contents *Contents
	// ns and name are where the CR is restored.
	ns, name string
}

func (r *RestoreReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := r.opts.read(ctx, req.NamespacedName, api.RestoreKind(r.opts.Watched))
	if err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	run := &restoreRun{obj: obj, st: &api.RestoreStatus{}}
	if err := fromObject(obj, &run.spec, run.st); err != nil {
		return reconcile.Result{}, err
	}
	if run.st.Phase.Done() {
		return reconcile.Result{}, nil
	}
	res, err := r.step(ctx, run)
	if werr := writeStatus(ctx, r.opts.Client, obj, run.st); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	// Only once the status says the restore ended: what cleanup deletes
	// (movers, serving pods, tokens) is what an unfinished one goes on with.
	if run.st.Phase.Done() {
		r.cleanup(ctx, run)
	}
	return res, err
}

// step advances a restore by one stage and says when to look again:
// observe reads, planRestore decides, act writes.
func (r *RestoreReconciler) step(ctx context.Context, run *restoreRun) (reconcile.Result, error) {
	seen, err := r.observe(ctx, run)
	if err != nil {
		return reconcile.Result{}, err
	}
	return r.act(ctx, run, seen, planRestore(seen))
}

// restoreStage is how far a restore got.
type restoreStage int

const (
	// stageStart: Pending, nothing written yet.
	stageStart restoreStage = iota
	// stageVolumes: Running, the volumes being refilled.
	stageVolumes
	// stageRelease: the CR is created, its release awaited.
	stageRelease
)

// restoreSeen is what observe read of a restore's world.
type restoreSeen struct {
	seen
	stage restoreStage
	// cr names the restored CR ("Kind ns/name"); crFailed is its condition
	// that says its release failed, crReady whether it is Deployed and
	// Ready, crAge how long it has existed.
	cr       string
	crFailed *metav1.Condition
	// snapshotContents are, for a restore into another namespace, the
	// contents of the backup's snapshots, by claim.
	snapshotContents map[string]*snapv1.VolumeSnapshotContent
	crReady          bool
	crAge            time.Duration
}

// planRestore decides a restore's next action from what observe saw.
func planRestore(s restoreSeen) plan {
	switch {
	case s.blocked != nil:
		return plan{action: actFail, why: *s.blocked}
	case s.stage == stageStart:
		return plan{action: actStart}
	case s.stage == stageVolumes:
		return planVolumes(s.volumes, actCreateCR)
	case s.crFailed != nil:
		return plan{action: actFail, why: problem{ReasonReleaseFailed, fmt.Sprintf("the release of %s: %s: %s", s.cr, s.crFailed.Reason, s.crFailed.Message)}}
	case !s.crReady && s.crAge > DefaultReleaseTimeout:
		return plan{action: actFail, why: problem{ReasonReleaseFailed, fmt.Sprintf("%s is not Deployed and Ready %s after its creation", s.cr, DefaultReleaseTimeout)}}
	case !s.crReady:
		return plan{action: actPoll}
	}
	return plan{action: actFinish}
}

// observe reads what planRestore decides from; it writes nothing.
func (r *RestoreReconciler) observe(ctx context.Context, run *restoreRun) (restoreSeen, error) {
	var seen restoreSeen
	switch {
	case run.st.Phase == "" || run.st.Phase == api.PhasePending:
		seen.stage = stageStart
	case run.st.Restored == "":
		seen.stage = stageVolumes
	default:
		seen.stage = stageRelease
	}
	blocked, err := r.load(ctx, run)
	if err != nil || blocked != nil {
		seen.blocked = blocked
		return seen, err
	}
	switch seen.stage {
	case stageStart:
		err = r.observeStart(ctx, run, &seen)
	case stageVolumes:
		err = r.observeVolumes(ctx, run, &seen)
	default:
		err = r.observeRelease(ctx, run, &seen)
	}
	return seen, err
}

// load checks that the namespace restored into lets this one in, then
// reads the Backup and its contents; a problem fails the restore. The
// grant is checked at every step, before anything else: a grant deleted
// mid-restore stops it.
func (r *RestoreReconciler) load(ctx context.Context, run *restoreRun) (*problem, error) {
	ns := run.obj.GetNamespace()
	why, err := r.checkGrant(ctx, ns, run.spec.TargetNamespace)
	if err != nil {
		return nil, err
	}
	if why != "" {
		return &problem{ReasonTargetNotGranted, why}, nil
	}
	b := &unstructured.Unstructured{}
	b.SetGroupVersionKind(api.BackupKind(r.opts.Watched))
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: run.spec.BackupName}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return &problem{ReasonBackupNotFound, fmt.Sprintf("%s %s/%s does not exist", b.GetKind(), ns, run.spec.BackupName)}, nil
		}
		return nil, fmt.Errorf("reading backup %s: %w", run.spec.BackupName, err)
	}
	var bst api.BackupStatus
	if err := fromObject(b, &run.backup, &bst); err != nil {
		return nil, err
	}
	if notStartedFromDeleted(run, b) {
		return &problem{ReasonBackupDeleting, fmt.Sprintf("backup %s is being deleted, with its archives", run.spec.BackupName)}, nil
	}
	if bst.Phase != api.PhaseCompleted {
		return &problem{ReasonBackupNotCompleted, fmt.Sprintf("backup %s is %q, not Completed", run.spec.BackupName, bst.Phase)}, nil
	}
	elsewhere := run.spec.TargetNamespace != "" && run.spec.TargetNamespace != ns
	run.contents, err = loadCheckedContents(ctx, r.opts.Reader, ns, run.spec.BackupName, func(data []byte) error {
		return checkDigest(data, bst.ContentsDigest, elsewhere)
	})
	switch {
	case errors.Is(err, ErrContentsTampered), errors.Is(err, ErrContentsUnverified):
		return &problem{ReasonContentsTampered, err.Error()}, nil
	case err != nil:
		return &problem{ReasonContentsLost, err.Error()}, nil
	}
	run.ns, run.name = ns, run.contents.Release
	if run.spec.TargetNamespace != "" {
		run.ns = run.spec.TargetNamespace
	}
	if run.spec.TargetName != "" {
		run.name = run.spec.TargetName
	}
	return nil, nil
}

// rename maps a name of the backed-up release to the restored one's:
// charts name their objects after the release.
func (run *restoreRun) rename(name string) string {
	if old := run.contents.Release; old != run.name && strings.Contains(name, old) {
		return strings.Replace(name, old, run.name, 1)
	}
	return name
}

// observeStart reads, changing nothing, whether anything the restore
// would create exists, whether the backup's snapshots can be restored,
// and the movers' image.
func (r *RestoreReconciler) observeStart(ctx context.Context, run *restoreRun, seen *restoreSeen) error {
	if !run.spec.Overwrite {
		existing, err := r.existing(ctx, run)
		if err != nil {
			return err
		}
		if len(existing) > 0 {
			seen.blocked = &problem{ReasonAlreadyExists, fmt.Sprintf("%s exist(s) in namespace %s; nothing was changed (set spec.overwrite to replace them)", strings.Join(existing, ", "), run.ns)}
			return nil
		}
	} else {
		// A snapshot fills a new claim only: one in place would be kept as it is.
		for _, claim := range slices.Sorted(maps.Keys(run.contents.Snapshots)) {
			err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.ns, Name: run.rename(claim)}, &corev1.PersistentVolumeClaim{})
			if err == nil {
				seen.blocked = &problem{ReasonAlreadyExists, fmt.Sprintf("PersistentVolumeClaim %s exists in namespace %s and backup %s holds its data as a VolumeSnapshot, which fills only a new claim: delete the claim first; nothing was changed", run.rename(claim), run.ns, run.spec.BackupName)}
				return nil
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("looking for claim %s/%s: %w", run.ns, run.rename(claim), err)
			}
		}
	}
	var why string
	var err error
	if seen.snapshotContents, why, err = r.snapshotContents(ctx, run); err != nil {
		return err
	}
	if why != "" {
		seen.blocked = &problem{ReasonSnapshotNotFound, why + "; nothing was changed"}
		return nil
	}
	if seen.image, err = r.opts.moverImage(ctx); err != nil {
		seen.blocked = &problem{ReasonNoMoverImage, err.Error()}
	}
	return nil
}

// observeVolumes reads the serving pods, each volume's mover pod or
// restored claim, and the image when a mover pod is missing.
func (r *RestoreReconciler) observeVolumes(ctx context.Context, run *restoreRun, seen *restoreSeen) error {
	if run.served() {
		msg, err := r.serverFailed(ctx, run)
		if err != nil {
			return err
		}
		if msg != "" {
			seen.blocked = &problem{ReasonMoverFailed, msg}
			return nil
		}
	}
	seen.volumes = make([]volumeLook, len(run.st.Volumes))
	for i, v := range run.st.Volumes {
		var err error
		switch {
		case v.Phase == api.PhaseCompleted, i >= len(run.contents.Claims):
		case v.Method == api.VolumeMethodSnapshot:
			var pvc corev1.PersistentVolumeClaim
			if err = r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.ns, Name: v.ClaimName}, &pvc); err != nil {
				return fmt.Errorf("reading the restored claim %s/%s: %w", run.ns, v.ClaimName, err)
			}
			seen.volumes[i] = claimLook(&pvc)
		default:
			name := moverName(run.obj.GetName(), "restore", run.contents.Claims[i].Name)
			seen.volumes[i], err = r.opts.lookMover(ctx, run.ns, name, "refilling claim "+v.ClaimName)
		}
		if err != nil {
			return err
		}
	}
	r.opts.needImage(ctx, &seen.seen, run.st.Volumes)
	return nil
}

// observeRelease reads the restored CR's conditions, and its release's
// pods once it is Deployed and Ready.
func (r *RestoreReconciler) observeRelease(ctx context.Context, run *restoreRun, seen *restoreSeen) error {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(r.opts.Watched)
	seen.cr = r.opts.Watched.Kind + " " + run.st.Restored
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.ns, Name: run.name}, cr); err != nil {
		return fmt.Errorf("reading the restored %s: %w", seen.cr, err)
	}
	st := reconciler.StatusOf(cr)
	for _, typ := range []string{reconciler.TypeIrreconcilable, reconciler.TypeReleaseFailed} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue && seen.crFailed == nil {
			seen.crFailed = c
		}
	}
	seen.crReady = meta.IsStatusConditionTrue(st.Conditions, reconciler.TypeDeployed) && meta.IsStatusConditionTrue(st.Conditions, reconciler.TypeReady)
	seen.crAge = r.opts.Now().Sub(cr.GetCreationTimestamp().Time)
	if !seen.crReady || seen.crFailed != nil {
		return nil
	}
	var err error
	seen.hooks, err = r.opts.hookPods(ctx, run.ns, run.name)
	return err
}

// act carries out a plan: the writes, the hooks and the status.
func (r *RestoreReconciler) act(ctx context.Context, run *restoreRun, seen restoreSeen, p plan) (reconcile.Result, error) {
	for i, l := range seen.volumes {
		recordVolume(&run.st.Volumes[i], l, r.opts.Now().Sub(run.st.StartTime.Time))
	}
	switch p.action {
	case actFail:
		r.fail(run, p.why.reason, p.why.message)
	case actStart:
		return r.begin(ctx, run, seen.image, seen.snapshotContents)
	case actPoll:
		for _, i := range p.create {
			if err := r.createMover(ctx, run, seen.image, run.contents.Claims[i].Name); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: pollPeriod}, nil
	case actCreateCR:
		return r.createRelease(ctx, run)
	case actFinish:
		if err := r.opts.runHooks(ctx, seen.hooks, postRestore, DefaultHookTimeout); err != nil {
			r.fail(run, hookReason(err), err.Error())
			return reconcile.Result{}, nil
		}
		run.st.Phase, run.st.Reason = api.PhaseCompleted, ReasonCompleted
		run.st.CompletionTime = ptr.To(metav1.NewTime(r.opts.Now()))
		run.st.Duration = elapsed(run.st.StartTime, run.st.CompletionTime)
		run.st.Message = fmt.Sprintf("%s restored from backup %s with %d volume(s), Deployed and Ready", seen.cr, run.spec.BackupName, len(run.st.Volumes))
		r.opts.event(run.obj, corev1.EventTypeNormal, "RestoreCompleted", run.st.Message+" in "+run.st.Duration)
	}
	return reconcile.Result{}, nil
}

// begin copies the snapshots (their contents) into another namespace, creates the objects
// and the credentials, turns the restore Running and starts the movers.
func (r *RestoreReconciler) begin(ctx context.Context, run *restoreRun, image string, contents map[string]*snapv1.VolumeSnapshotContent) (reconcile.Result, error) {
	for _, claim := range slices.Sorted(maps.Keys(contents)) {
		if err := r.copySnapshot(ctx, run, claim, contents[claim]); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.createObjects(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.copyCredentials(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	run.st.Phase, run.st.Reason = api.PhaseRunning, ReasonRestoringVolumes
	run.st.Message = fmt.Sprintf("refilling %d volume(s) from backup %s", len(run.contents.Claims), run.spec.BackupName)
	run.st.StartTime = ptr.To(metav1.NewTime(r.opts.Now()))
	run.st.Volumes = nil
	for _, c := range run.contents.Claims {
		v := api.VolumeResult{ClaimName: run.rename(c.Name), Phase: api.PhasePending, Method: api.VolumeMethodCopy}
		if _, ok := run.contents.Snapshots[c.Name]; ok {
			v.Method, v.Snapshot = api.VolumeMethodSnapshot, run.restoreSource(c.Name)
			run.st.Volumes = append(run.st.Volumes, v)
			continue // the provisioner fills the claim from the snapshot
		}
		run.st.Volumes = append(run.st.Volumes, v)
		if err := r.createMover(ctx, run, image, c.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	r.opts.event(run.obj, corev1.EventTypeNormal, "RestoreStarted", run.st.Message)
	return reconcile.Result{RequeueAfter: pollPeriod}, nil
}

// existing names what the restore would create that already exists.
func (r *RestoreReconciler) existing(ctx context.Context, run *restoreRun) ([]string, error) {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(r.opts.Watched)
	cr.SetName(run.name)
	var out []string
	for _, o := range append([]client.Object{cr}, run.objects()...) {
		kind := o.GetObjectKind().GroupVersionKind().Kind
		err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.ns, Name: o.GetName()}, o.DeepCopyObject().(client.Object))
		switch {
		case err == nil:
			out = append(out, kind+" "+o.GetName())
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("looking for %s %s/%s: %w", kind, run.ns, o.GetName(), err)
		}
	}
	return out, nil
}

// objects are the claims, Secrets and ConfigMaps the restore creates, as
// the restored release's.
func (run *restoreRun) objects() []client.Object {
	var objs []client.Object
	for _, c := range run.contents.Claims {
		pvc := &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}, ObjectMeta: run.adopt(c.ObjectMeta), Spec: c.Spec}
		if _, ok := run.contents.Snapshots[c.Name]; ok {
			pvc.Spec.DataSource = dataSource(run.restoreSource(c.Name))
		}
		objs = append(objs, pvc)
	}
	for _, s := range run.contents.Secrets {
		objs = append(objs, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: run.adopt(s.ObjectMeta), Type: s.Type, Data: s.Data, Immutable: s.Immutable})
	}
	for _, cm := range run.contents.ConfigMaps {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: run.adopt(cm.ObjectMeta), Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable})
	}
	return objs
}

// adopt gives meta the restored release's ownership, so that its install
// takes the object over instead of refusing it.
func (run *restoreRun) adopt(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Name, m.Namespace = run.rename(m.Name), run.ns
	m.Labels, m.Annotations = copyMap(m.Labels), copyMap(m.Annotations)
	if m.Labels[instanceLabel] == run.contents.Release {
		m.Labels[instanceLabel] = run.name
	}
	m.Labels[helmManagedBy] = "Helm"
	m.Labels[api.RestoreLabel] = run.obj.GetName()
	m.Annotations[helmReleaseName] = run.name
	m.Annotations[helmReleaseNamespace] = run.ns
	return m
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+2)
	maps.Copy(out, m)
	return out
}

// createObjects creates (or, with overwrite, replaces) the claims,
// Secrets and ConfigMaps of the backup.
func (r *RestoreReconciler) createObjects(ctx context.Context, run *restoreRun) error {
	for _, o := range run.objects() {
		err := r.opts.Client.Create(ctx, o)
		if apierrors.IsAlreadyExists(err) && run.spec.Overwrite {
			if _, isClaim := o.(*corev1.PersistentVolumeClaim); isClaim {
				continue // refilled in place
			}
			err = r.replace(ctx, o)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("restoring %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

func (r *RestoreReconciler) replace(ctx context.Context, o client.Object) error {
	cur := o.DeepCopyObject().(client.Object)
	if err := r.opts.Reader.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return err
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	return r.opts.Client.Update(ctx, o)
}

func (r *RestoreReconciler) createMover(ctx context.Context, run *restoreRun, image, claim string) error {
	where, flags := archiveLocation(run.backup.Target, run.obj.GetNamespace(), run.spec.BackupName, claim)
	archive, s3Secret := targetClaim(run.backup.Target), run.credentialsSecret()
	var env []corev1.EnvVar
	if run.served() {
		url, err := r.serveURL(ctx, run, image, claim)
		if err != nil || url == "" {
			return err // created once the serving pod has an address
		}
		where, flags, archive, env = url, nil, "", tokenEnv(run.tokenSecret())
	}
	pod := moverPod(moverSpec{
		name: moverName(run.obj.GetName(), "restore", claim), namespace: run.ns, image: image,
		labels: map[string]string{api.RestoreLabel: run.obj.GetName(), api.ClaimLabel: run.rename(claim), moverLabel: "restore"},
		owner:  ownerRef(run.obj),
		args:   append([]string{"restore", "--from", where, "--to", sourceMount}, flags...),
		source: run.rename(claim), archive: archive, archiveRO: true,
		security: run.contents.security(claim), s3Secret: s3Secret, env: env,
	})
	if run.ns != run.obj.GetNamespace() {
		// An owner of another namespace would have the pod collected.
		pod.OwnerReferences = nil
	}
	if err := r.opts.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mover pod %s for claim %s: %w", pod.Name, run.rename(claim), err)
	}
	return nil
}

// createRelease deletes the snapshots' copies, creates the CR and
// deletes the copy of the credentials: the volumes are refilled.
func (r *RestoreReconciler) createRelease(ctx context.Context, run *restoreRun) (reconcile.Result, error) {
	if err := r.deleteSnapshotCopies(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.createCR(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.deleteCredentials(ctx, run); err != nil {
		return reconcile.Result{}, err
	}
	run.st.Restored = run.ns + "/" + run.name
	run.st.Reason = ReasonWaitingForRelease
	run.st.Message = fmt.Sprintf("%s %s created; waiting for its release", r.opts.Watched.Kind, run.st.Restored)
	return reconcile.Result{RequeueAfter: pollPeriod}, nil
}

// createCR creates the CR from the backup (or, with overwrite, replaces
// the spec, labels and annotations of the one there).
func (r *RestoreReconciler) createCR(ctx context.Context, run *restoreRun) error {
	cr := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(run.contents.CR)}
	// The watched kind whatever the contents say: a backup made before
	// digests is not checked, and its author must not pick what the
	// operator creates with its own rights.
	cr.SetGroupVersionKind(r.opts.Watched)
	cr.SetName(run.name)
	cr.SetNamespace(run.ns)
	labels := cr.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[api.RestoreLabel] = run.obj.GetName()
	cr.SetLabels(labels)
	err := r.opts.Client.Create(ctx, cr)
	if apierrors.IsAlreadyExists(err) && run.spec.Overwrite {
		err = r.replace(ctx, cr)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", cr.GetKind(), run.ns, run.name, err)
	}
	return nil
}

func (r *RestoreReconciler) fail(run *restoreRun, reason, msg string) {
	run.st.Phase, run.st.Reason, run.st.Message = api.PhaseFailed, reason, msg
	run.st.CompletionTime = ptr.To(metav1.NewTime(r.opts.Now()))
	run.st.Duration = elapsed(run.st.StartTime, run.st.CompletionTime)
	r.opts.event(run.obj, corev1.EventTypeWarning, "RestoreFailed", reason+": "+msg)
}

// credentialsSecret is the Secret of the restore's namespace holding an S3
// target's credentials: the backup's own, or a copy in another namespace.
func (run *restoreRun) credentialsSecret() string {
	s3 := run.backup.Target.S3
	switch {
	case s3 == nil:
		return ""
	case run.ns == run.obj.GetNamespace():
		return s3.CredentialsSecret
	}
	return shorten(run.obj.GetName(), "s3", "")
}

// copyCredentials copies an S3 target's credentials into the namespace
// restored into, for its mover pods, until the volumes are refilled.
func (r *RestoreReconciler) copyCredentials(ctx context.Context, run *restoreRun) error {
	s3 := run.backup.Target.S3
	if s3 == nil || run.ns == run.obj.GetNamespace() {
		return nil
	}
	var src corev1.Secret
	if err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: run.obj.GetNamespace(), Name: s3.CredentialsSecret}, &src); err != nil {
		return fmt.Errorf("reading the credentials Secret %s of backup %s: %w", s3.CredentialsSecret, run.spec.BackupName, err)
	}
	dst := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: run.credentialsSecret(), Namespace: run.ns, Labels: map[string]string{api.RestoreLabel: run.obj.GetName()}},
		Data:       map[string][]byte{api.S3AccessKeyIDKey: src.Data[api.S3AccessKeyIDKey], api.S3SecretAccessKeyKey: src.Data[api.S3SecretAccessKeyKey]},
	}
	if err := r.opts.Client.Create(ctx, dst); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("copying the S3 credentials to Secret %s/%s: %w", run.ns, dst.Name, err)
	}
	return nil
}

func (r *RestoreReconciler) deleteCredentials(ctx context.Context, run *restoreRun) error {
	if run.backup.Target.S3 == nil || run.ns == run.obj.GetNamespace() {
		return nil
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: run.credentialsSecret(), Namespace: run.ns}}
	if err := client.IgnoreNotFound(r.opts.Client.Delete(ctx, s)); err != nil {
		return fmt.Errorf("deleting the copy of the S3 credentials %s/%s: %w", run.ns, s.Name, err)
	}
	return nil
}
