package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// Reasons of a Backup being deleted.
const (
	ReasonDeletingArchives      = "DeletingArchives"
	ReasonArchiveDeletionFailed = "ArchiveDeletionFailed"
)

// ArchiveDeleteTimeout bounds how long a deleted Backup waits for its
// archives to go when deleting them keeps failing (a store away, a mover
// pod that cannot run): then the Backup goes, an event names what is left,
// and its namespace's deletion is not held forever.
const ArchiveDeleteTimeout = 5 * time.Minute

// errArchivesUnreachable means the archives cannot be deleted by anyone:
// their claim, credentials or bucket are gone, or the namespace is being
// deleted (no pod starts there). Waiting would not help.
var errArchivesUnreachable = errors.New("the archives cannot be reached")

// archiveDeletion is what one attempt to delete a Backup's archives found.
type archiveDeletion struct {
	// pending: a mover pod deletes them still.
	pending bool
	// removed counts the files or objects deleted once done.
	removed int64
	err     error
}

// finalize deletes a deleted Backup's archives, then lets it go. A failure
// is in its status (ArchiveDeletionFailed) and retried until
// ArchiveDeleteTimeout; archives nobody can reach are given up at once. An
// event says what was deleted or left.
func (r *BackupReconciler) finalize(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, api.ArchivesFinalizer) {
		return reconcile.Result{}, nil
	}
	held, err := r.opts.restoresReading(ctx, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(held) > 0 {
		st.Reason, st.Message = ReasonHeldByRestore, heldMessage(held)
		return reconcile.Result{RequeueAfter: pollPeriod}, writeStatus(ctx, r.opts.Client, obj, st)
	}
	where := archivesName(spec.Target, obj.GetNamespace(), obj.GetName())
	d := r.deleteArchives(ctx, obj, spec, st)
	since := r.opts.Now().Sub(obj.GetDeletionTimestamp().Time)
	switch {
	case d.pending:
		st.Reason, st.Message = ReasonDeletingArchives, "deleting the archives "+where
		return reconcile.Result{RequeueAfter: pollPeriod}, writeStatus(ctx, r.opts.Client, obj, st)
	case d.err != nil && !errors.Is(d.err, errArchivesUnreachable) && since < ArchiveDeleteTimeout:
		delay := archiveRetryDelay(since)
		st.Reason, st.Message = ReasonArchiveDeletionFailed, fmt.Sprintf("deleting the archives %s (next attempt in %s, retried until %s after the deletion): %v", where, delay.Round(time.Second), ArchiveDeleteTimeout, d.err)
		r.opts.event(obj, corev1.EventTypeWarning, ReasonArchiveDeletionFailed, st.Message)
		return reconcile.Result{RequeueAfter: delay}, writeStatus(ctx, r.opts.Client, obj, st)
	case d.err != nil:
		r.opts.event(obj, corev1.EventTypeWarning, "ArchivesLeft", fmt.Sprintf("the archives %s are left: %v", where, d.err))
	default:
		r.opts.event(obj, corev1.EventTypeNormal, "ArchivesDeleted", fmt.Sprintf("deleted %d archive file(s) %s", d.removed, where))
	}
	r.opts.deleteMoversOf(ctx, obj.GetNamespace(), api.BackupLabel, obj.GetName())
	controllerutil.RemoveFinalizer(obj, api.ArchivesFinalizer)
	if err := r.opts.Client.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing the finalizer of backup %s: %w", obj.GetName(), err)
	}
	return reconcile.Result{}, nil
}

// archivesName names where a Backup's archives are, for people.
func archivesName(t api.Target, ns, backup string) string {
	switch {
	case t.S3 != nil:
		return "s3://" + t.S3.Bucket + "/" + archivesPrefix(t.S3, ns, backup) + " at " + t.S3.Endpoint
	case t.PVC != nil:
		return "in claim " + t.PVC.ClaimName + " under " + archiveDir(t.PVC.Path, ns, backup)
	}
	return "(no target)"
}

// archiveDir is the folder of a backup's archives inside the target claim.
func archiveDir(targetPath, ns, backup string) string {
	return path.Dir(archiveName(targetPath, ns, backup, "x"))
}

// archivesPrefix is the key prefix of a backup's archives in a bucket.
func archivesPrefix(t *api.S3Target, ns, backup string) string {
	return path.Dir(path.Join(t.Prefix, ns, backup, "x")) + "/"
}

// copied says whether a backup copied any claim to its target (backups
// from before volumeMethod existed name no method: they copied).
func copied(st *api.BackupStatus) bool {
	return len(st.Volumes) == 0 || slices.ContainsFunc(st.Volumes, func(v api.VolumeResult) bool { return v.Method != api.VolumeMethodSnapshot })
}

// deleteArchives deletes what a backup wrote on its target, and its
// VolumeSnapshots: the objects
// under its prefix (from the operator), or its folder in the target claim
// (through a mover pod, which mounts the claim).
func (r *BackupReconciler) deleteArchives(ctx context.Context, obj *unstructured.Unstructured, spec api.BackupSpec, st *api.BackupStatus) archiveDeletion {
	if st.StartTime == nil && len(st.Volumes) == 0 {
		return archiveDeletion{} // no mover ever ran: nothing written
	}
	ns := obj.GetNamespace()
	if err := r.opts.deleteSnapshots(ctx, ns, obj.GetName()); err != nil {
		return archiveDeletion{err: err}
	}
	if !copied(st) {
		return archiveDeletion{} // every claim was a snapshot: no archive
	}
	// A copy still running would write after the deletion.
	if err := r.opts.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.MatchingLabels{api.BackupLabel: obj.GetName(), moverLabel: "backup"}); err != nil {
		return archiveDeletion{err: fmt.Errorf("deleting the mover pods: %w", err)}
	}
	switch {
	case spec.Target.S3 != nil:
		return r.deleteS3(ctx, ns, obj.GetName(), spec.Target.S3)
	case spec.Target.PVC != nil:
		return r.deleteOnClaim(ctx, obj, spec.Target.PVC, st)
	}
	return archiveDeletion{}
}

func (r *BackupReconciler) deleteS3(ctx context.Context, ns, backup string, t *api.S3Target) archiveDeletion {
	store, reason, err := r.opts.s3Store(ctx, ns, t)
	if reason != "" {
		return archiveDeletion{err: fmt.Errorf("%w: %v", errArchivesUnreachable, err)}
	}
	if err != nil {
		return archiveDeletion{err: err}
	}
	if err := s3Answers(ctx, store); err != nil {
		return archiveDeletion{err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := mover.RemoveS3(ctx, store, archivesPrefix(t, ns, backup))
	if errors.Is(err, mover.ErrNoBucket) {
		err = fmt.Errorf("%w: %v", errArchivesUnreachable, err)
	}
	return archiveDeletion{removed: res.Files, err: err}
}

// deleteOnClaim runs (or looks at) the mover pod that deletes the backup's
// folder in the target claim, as the user its backup movers ran as.
func (r *BackupReconciler) deleteOnClaim(ctx context.Context, obj *unstructured.Unstructured, t *api.PVCTarget, st *api.BackupStatus) archiveDeletion {
	ns := obj.GetNamespace()
	var pvc corev1.PersistentVolumeClaim
	err := r.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.ClaimName}, &pvc)
	switch {
	case apierrors.IsNotFound(err) || err == nil && pvc.DeletionTimestamp != nil:
		return archiveDeletion{err: fmt.Errorf("%w: the target claim %s is gone, with the archives", errArchivesUnreachable, t.ClaimName)}
	case err != nil:
		return archiveDeletion{err: fmt.Errorf("reading the target claim %s: %w", t.ClaimName, err)}
	}
	name := shorten(obj.GetName(), "delete", "")
	l, err := r.opts.lookMover(ctx, ns, name, "deleting the archives")
	if err == nil && l.missing {
		var image string
		if image, err = r.opts.moverImage(ctx); err != nil {
			return archiveDeletion{err: err}
		}
		l, err = volumeLook{running: true}, r.createDeleter(ctx, obj, t, st, image, name)
	}
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return archiveDeletion{err: fmt.Errorf("%w: namespace %s is being deleted", errArchivesUnreachable, ns)}
	case err != nil:
		return archiveDeletion{err: err}
	case l.running:
		return archiveDeletion{pending: true}
	case l.failed:
		// The next attempt starts a new pod.
		_ = r.opts.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		return archiveDeletion{err: errors.New(l.why.message)}
	}
	return archiveDeletion{removed: l.files}
}

func (r *BackupReconciler) createDeleter(ctx context.Context, obj *unstructured.Unstructured, t *api.PVCTarget, st *api.BackupStatus, image, name string) error {
	ns := obj.GetNamespace()
	sec, err := r.moverSecurity(ctx, ns, obj.GetName(), st)
	if err != nil {
		return err
	}
	pod := moverPod(moverSpec{
		name: name, namespace: ns, image: image,
		labels: map[string]string{api.BackupLabel: obj.GetName(), moverLabel: "delete"},
		owner:  ownerRef(obj),
		args:   []string{"delete", "--to", path.Join(sourceMount, archiveDir(t.Path, ns, obj.GetName()))},
		source: t.ClaimName, security: sec,
	})
	if err := r.opts.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mover pod %s to delete the archives: %w", name, err)
	}
	return nil
}

// moverSecurity is the user the backup's movers ran as (kept in its
// contents): the files are theirs. Without the contents, the user of the
// pods mounting its first claim now.
func (r *BackupReconciler) moverSecurity(ctx context.Context, ns, backup string, st *api.BackupStatus) (*corev1.PodSecurityContext, error) {
	if c, err := loadContents(ctx, r.opts.Reader, ns, backup); err == nil {
		for _, v := range st.Volumes {
			if sec := c.Security[v.ClaimName]; sec != nil {
				return sec, nil
			}
		}
	}
	claim := ""
	if len(st.Volumes) > 0 {
		claim = st.Volumes[0].ClaimName
	}
	return OperandSecurity(ctx, r.opts.Reader, ns, claim)
}
