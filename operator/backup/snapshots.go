package backup

import (
	"context"
	"fmt"
	"maps"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/internal/volumesnapshot"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Reasons of the snapshot path.
const (
	// ReasonSnapshotClassMissing: spec.volumeMethod is snapshot and a
	// claim's driver has no (such) VolumeSnapshotClass.
	ReasonSnapshotClassMissing = "SnapshotClassMissing"
	// ReasonSnapshotFailed: the snapshot controller or the driver reported
	// an error on a VolumeSnapshot.
	ReasonSnapshotFailed = "SnapshotFailed"
	// ReasonSnapshotNotFound: a restore's VolumeSnapshot is gone.
	ReasonSnapshotNotFound = "SnapshotNotFound"
	ReasonSnapshotting     = "Snapshotting"
)

// The snapshot API's kinds, read and written as unstructured objects so
// that the operator's scheme and cache need not know them.
var (
	snapshotGVK        = snapv1.SchemeGroupVersion.WithKind("VolumeSnapshot")
	snapshotContentGVK = snapv1.SchemeGroupVersion.WithKind("VolumeSnapshotContent")
	snapshotClassGVK   = snapv1.SchemeGroupVersion.WithKind("VolumeSnapshotClassList")
)

// snapshotName is the deterministic name of a backup's snapshot of a claim.
func snapshotName(backup, claim string) string { return shorten(backup, "snap", claim) }

// volumePlan decides, per claim, how a backup keeps its data: a
// snapshot of the class it names, or a copy. A non-empty reason means the
// backup fails with it (msg says why), before anything is made.
func (o *Options) volumePlan(ctx context.Context, spec api.BackupSpec, claims []corev1.PersistentVolumeClaim) (plan map[string]string, reason, msg string, err error) {
	plan = map[string]string{} // claim -> VolumeSnapshotClass; absent: copy
	method := spec.VolumeMethod
	if method == api.VolumeMethodCopy || len(claims) == 0 {
		return plan, "", "", nil
	}
	classes, err := o.snapshotClasses(ctx)
	if err != nil {
		return nil, "", "", err
	}
	for _, c := range claims {
		driver, err := o.provisioner(ctx, c)
		if err != nil {
			return nil, "", "", err
		}
		class := volumesnapshot.ClassFor(classes, driver, spec.VolumeSnapshotClassName)
		switch {
		case class != nil:
			plan[c.Name] = class.Name
		case method == api.VolumeMethodSnapshot:
			return nil, ReasonSnapshotClassMissing, missingClass(c, driver, spec.VolumeSnapshotClassName), nil
		}
	}
	return plan, "", "", nil
}

func missingClass(c corev1.PersistentVolumeClaim, driver, named string) string {
	want := "no default VolumeSnapshotClass"
	if named != "" {
		want = fmt.Sprintf("no VolumeSnapshotClass %s", named)
	}
	if driver == "" {
		driver = "none"
	}
	return fmt.Sprintf("claim %s (StorageClass %s, provisioner %s): %s for its driver; nothing was snapshotted or copied (volumeMethod auto or copy copies it to the target)",
		c.Name, ptr.Deref(c.Spec.StorageClassName, ""), driver, want)
}

// snapshotClasses lists the cluster's VolumeSnapshotClasses; none when
// the API is not served, or the operator may not read them (a project
// scaffolded before snapshots: its backups copy, as they did).
func (o *Options) snapshotClasses(ctx context.Context) ([]snapv1.VolumeSnapshotClass, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(snapshotClassGVK)
	if err := o.Reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing VolumeSnapshotClasses: %w", err)
	}
	out := make([]snapv1.VolumeSnapshotClass, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out[i]); err != nil {
			return nil, fmt.Errorf("reading VolumeSnapshotClass %s: %w", u.GetName(), err)
		}
	}
	return out, nil
}

// provisioner is the driver of a claim's StorageClass ("" without one).
func (o *Options) provisioner(ctx context.Context, c corev1.PersistentVolumeClaim) (string, error) {
	name := ptr.Deref(c.Spec.StorageClassName, "")
	if name == "" {
		return "", nil
	}
	var sc storagev1.StorageClass
	err := o.Reader.Get(ctx, client.ObjectKey{Name: name}, &sc)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading StorageClass %s of claim %s: %w", name, c.Name, err)
	}
	return sc.Provisioner, nil
}

func unstructuredOf(obj any, kind string) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(snapv1.SchemeGroupVersion.WithKind(kind))
	return u, nil
}

// createSnapshot creates the backup's VolumeSnapshot of a claim, owned by
// the Backup (deleting it deletes them, through its finalizer).
func (o *Options) createSnapshot(ctx context.Context, backup *unstructured.Unstructured, claim, class string) error {
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name: snapshotName(backup.GetName(), claim), Namespace: backup.GetNamespace(),
			Labels:          map[string]string{api.BackupLabel: backup.GetName(), api.ClaimLabel: claim},
			OwnerReferences: []metav1.OwnerReference{ownerRef(backup)},
		},
		Spec: snapv1.VolumeSnapshotSpec{
			Source:                  snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)},
			VolumeSnapshotClassName: ptr.To(class),
		},
	}
	u, err := unstructuredOf(vs, snapshotGVK.Kind)
	if err != nil {
		return err
	}
	if err := o.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating VolumeSnapshot %s of claim %s: %w", vs.Name, claim, err)
	}
	return nil
}

// getSnapshot reads a VolumeSnapshot; nil when there is none.
func (o *Options) getSnapshot(ctx context.Context, ns, name string) (*snapv1.VolumeSnapshot, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(snapshotGVK)
	err := o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading VolumeSnapshot %s/%s: %w", ns, name, err)
	}
	var vs snapv1.VolumeSnapshot
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vs); err != nil {
		return nil, fmt.Errorf("reading VolumeSnapshot %s/%s: %w", ns, name, err)
	}
	return &vs, nil
}

// deleteSnapshots deletes a backup's VolumeSnapshots (their contents and
// the driver's copies go with them, by the class's deletion policy).
func (o *Options) deleteSnapshots(ctx context.Context, ns, backup string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(snapshotGVK)
	err := o.Client.DeleteAllOf(ctx, u, client.InNamespace(ns), client.MatchingLabels{api.BackupLabel: backup})
	// Forbidden: the operator of a chart without claims holds no rule on
	// snapshots, and so made none.
	if err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("deleting the VolumeSnapshots of backup %s: %w", backup, err)
	}
	return nil
}

// restoreSource is the VolumeSnapshot a restored claim is made from in
// the namespace restored into: the backup's own, or for another
// namespace a copy bound to a pre-provisioned content that points at the
// same snapshot handle (with deletionPolicy Retain: deleting the copy
// leaves the backup's snapshot alone).
func (run *restoreRun) restoreSource(claim string) string {
	ref := run.contents.Snapshots[claim]
	if run.ns == run.obj.GetNamespace() {
		return ref.Name
	}
	return shorten(run.obj.GetName(), "snap", claim)
}

// copyContentName is the cluster-wide name of a cross-namespace copy's content.
func (run *restoreRun) copyContentName(claim string) string {
	return shorten(run.obj.GetNamespace()+"-"+run.obj.GetName(), "content", claim)
}

// dataSource is a claim's source for the provisioner: a VolumeSnapshot.
func dataSource(snapshot string) *corev1.TypedLocalObjectReference {
	return &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapv1.GroupName), Kind: snapshotGVK.Kind, Name: snapshot}
}

// snapshotContents reads, changing nothing, the backup's snapshots: why
// they cannot be restored ("" when they can: each exists and is ready),
// and for a restore into another namespace the content of each, whose
// handle its copy there points at.
func (r *RestoreReconciler) snapshotContents(ctx context.Context, run *restoreRun) (map[string]*snapv1.VolumeSnapshotContent, string, error) {
	out := map[string]*snapv1.VolumeSnapshotContent{}
	for _, claim := range slices.Sorted(maps.Keys(run.contents.Snapshots)) {
		ref := run.contents.Snapshots[claim]
		vs, err := r.opts.getSnapshot(ctx, run.obj.GetNamespace(), ref.Name)
		if err != nil {
			return nil, "", err
		}
		if vs == nil || vs.Status == nil || !ptr.Deref(vs.Status.ReadyToUse, false) || vs.Status.BoundVolumeSnapshotContentName == nil {
			return nil, fmt.Sprintf("VolumeSnapshot %s/%s of claim %s is missing or not ready", run.obj.GetNamespace(), ref.Name, claim), nil
		}
		if run.ns == run.obj.GetNamespace() {
			continue
		}
		cu := &unstructured.Unstructured{}
		cu.SetGroupVersionKind(snapshotContentGVK)
		if err := r.opts.Reader.Get(ctx, client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, cu); err != nil {
			return nil, "", fmt.Errorf("reading VolumeSnapshotContent %s of snapshot %s: %w", *vs.Status.BoundVolumeSnapshotContentName, ref.Name, err)
		}
		content := &snapv1.VolumeSnapshotContent{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cu.Object, content); err != nil {
			return nil, "", err
		}
		if content.Status == nil || content.Status.SnapshotHandle == nil {
			return nil, "", fmt.Errorf("VolumeSnapshotContent %s of snapshot %s has no snapshot handle", content.Name, ref.Name)
		}
		out[claim] = content
	}
	return out, "", nil
}

// copySnapshot makes the backup's snapshot of claim available in the
// namespace restored into: a VolumeSnapshotContent with the same handle
// as content, Retain, bound to a VolumeSnapshot there.
func (r *RestoreReconciler) copySnapshot(ctx context.Context, run *restoreRun, claim string, content *snapv1.VolumeSnapshotContent) error {
	name, labels := run.restoreSource(claim), map[string]string{api.RestoreLabel: run.obj.GetName()}
	copied := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: run.copyContentName(claim), Labels: labels},
		Spec: snapv1.VolumeSnapshotContentSpec{
			DeletionPolicy:          snapv1.VolumeSnapshotContentRetain,
			Driver:                  content.Spec.Driver,
			Source:                  snapv1.VolumeSnapshotContentSource{SnapshotHandle: content.Status.SnapshotHandle},
			VolumeSnapshotClassName: content.Spec.VolumeSnapshotClassName,
			VolumeSnapshotRef:       corev1.ObjectReference{Namespace: run.ns, Name: name},
		},
	}
	snap := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: run.ns, Labels: labels},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(copied.Name)}},
	}
	for _, o := range []struct {
		obj  any
		kind string
	}{{copied, snapshotContentGVK.Kind}, {snap, snapshotGVK.Kind}} {
		u, err := unstructuredOf(o.obj, o.kind)
		if err != nil {
			return err
		}
		if err := r.opts.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s for claim %s in namespace %s: %w", o.kind, u.GetName(), claim, run.ns, err)
		}
	}
	return nil
}

// deleteSnapshotCopies deletes a cross-namespace restore's copies once
// its claims are filled; the backup's snapshot stays (Retain).
func (r *RestoreReconciler) deleteSnapshotCopies(ctx context.Context, run *restoreRun) error {
	if run.ns == run.obj.GetNamespace() {
		return nil
	}
	for _, claim := range slices.Sorted(maps.Keys(run.contents.Snapshots)) {
		vs := &unstructured.Unstructured{}
		vs.SetGroupVersionKind(snapshotGVK)
		vs.SetNamespace(run.ns)
		vs.SetName(run.restoreSource(claim))
		content := &unstructured.Unstructured{}
		content.SetGroupVersionKind(snapshotContentGVK)
		content.SetName(run.copyContentName(claim))
		for _, o := range []*unstructured.Unstructured{vs, content} {
			if err := client.IgnoreNotFound(r.opts.Client.Delete(ctx, o)); err != nil {
				return fmt.Errorf("deleting %s %s, the copy of a snapshot: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}
