package backup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// completedBackup makes a Completed backup "nightly" of Store shop to the
// claim backups, playing the kubelet for its mover.
func (w *world) completedBackup() {
	w.t.Helper()
	w.store("shop", map[string]any{"greeting": "bonjour"})
	w.claim("backups")
	w.create(backupGVK, "nightly", backupSpec("shop", "backups"))
	w.kubelet(api.BackupLabel+"=nightly", mover.Result{Size: 4096, Files: 1})
	w.status(backupGVK, "nightly", phaseIs(api.PhaseCompleted))
	u, err := w.res(backupGVK).Get(w.ctx, "nightly", metav1.GetOptions{})
	if err != nil || !strings.Contains(strings.Join(u.GetFinalizers(), ","), api.ArchivesFinalizer) {
		w.t.Fatalf("backup without the finalizer %s: %v %v", api.ArchivesFinalizer, u.GetFinalizers(), err)
	}
}

func (w *world) deleteBackup(name string) time.Time {
	w.t.Helper()
	began := time.Now()
	if err := w.res(backupGVK).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatal(err)
	}
	return began
}

func (w *world) backupGone(name string) {
	w.t.Helper()
	w.gone("Backup "+name, func() error { _, err := w.res(backupGVK).Get(w.ctx, name, metav1.GetOptions{}); return err })
}

// event waits for an event of the reason on the object and returns its
// message.
func (w *world) event(object, reason string) string {
	w.t.Helper()
	return w.eventWith(object, reason, "")
}

// eventWith waits for an event of the reason on the object whose message
// holds text, and returns the message.
func (w *world) eventWith(object, reason, text string) string {
	w.t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := w.cs.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == object && e.Reason == reason && strings.Contains(e.Message, text) {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		var seen []string
		events, _ := w.cs.CoreV1().Events(w.ns).List(w.ctx, metav1.ListOptions{})
		for _, e := range events.Items {
			if e.InvolvedObject.Name == object {
				seen = append(seen, e.Reason+": "+e.Message)
			}
		}
		w.t.Fatalf("no event %s on %s with %q; its events:\n%s", reason, object, text, strings.Join(seen, "\n"))
	}
	return msg
}

// Deleting a Backup deletes its folder in the target claim through a
// mover pod (the claim read-write, the movers' user); a mover failing
// keeps the Backup with the reason in its status, and the next attempt
// lets it go.
func TestDeleteBackupDeletesArchivesOnClaim(t *testing.T) {
	w := newWorld(t)
	w.completedBackup()
	began := w.deleteBackup("nightly")

	pods := w.kubelet(api.BackupLabel+"=nightly", mover.Result{Error: "remove /source/x: read-only file system"})
	c := pods[0].Spec.Containers[0]
	want := []string{backup.MoverBinary, "mover", "delete", "--to", "/source/backups/" + w.ns + "/nightly"}
	if strings.Join(c.Command, " ") != strings.Join(want, " ") || pods[0].Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "backups" || pods[0].Spec.Volumes[0].PersistentVolumeClaim.ReadOnly {
		t.Errorf("delete mover runs %q on %+v, want %q on claim backups read-write", c.Command, pods[0].Spec.Volumes[0], want)
	}
	if *pods[0].Spec.SecurityContext.RunAsUser != backup.DefaultMoverUser || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("delete mover security: %+v %+v", pods[0].Spec.SecurityContext, c.SecurityContext)
	}
	st := w.status(backupGVK, "nightly", func(_ api.Phase, r string) bool { return r == backup.ReasonArchiveDeletionFailed })
	if msg, _ := st["message"].(string); !strings.Contains(msg, "read-only file system") || st["phase"] != string(api.PhaseCompleted) {
		t.Errorf("deletion failure status: %v", st)
	}

	// The failed pod is replaced; this one succeeds.
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := w.cs.CoreV1().Pods(w.ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
		return err == nil && p.UID != pods[0].UID && p.Status.Phase != corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatal("no new delete mover pod after a failure")
	}
	w.kubelet(api.BackupLabel+"=nightly", mover.Result{Size: 4096, Files: 1})
	w.backupGone("nightly")
	t.Logf("deletion with a retry took %s", time.Since(began).Round(time.Millisecond))
	if msg := w.event("nightly", "ArchivesDeleted"); !strings.Contains(msg, "1 archive file(s) in claim backups") {
		t.Errorf("ArchivesDeleted event: %s", msg)
	}
}

// A Backup whose target claim is gone goes at once: nobody could delete
// its archives, an event says so.
func TestDeleteBackupTargetGone(t *testing.T) {
	w := newWorld(t)
	w.completedBackup()
	if err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Delete(w.ctx, "backups", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.unprotect("backups")
	w.deleteBackup("nightly")
	w.backupGone("nightly")
	if msg := w.event("nightly", "ArchivesLeft"); !strings.Contains(msg, "claim backups is gone") {
		t.Errorf("ArchivesLeft event: %s", msg)
	}
}

// A backup that failed before any copy wrote nothing: it goes at once,
// without asking the store (here away).
func TestDeleteBackupNothingWritten(t *testing.T) {
	w := newWorld(t)
	w.store("shop", map[string]any{"greeting": "bonjour"})
	w.secret("s3-creds", map[string]string{api.S3AccessKeyIDKey: "id", api.S3SecretAccessKeyKey: "s3cr3t-never-logged"})
	w.create(backupGVK, "b", s3Spec("shop", "127.0.0.1:1", "s3-creds"))
	w.status(backupGVK, "b", failedWith(backup.ReasonTargetUnavailable))
	w.deleteBackup("b")
	w.backupGone("b")
	_, err := w.res(backupGVK).Get(w.ctx, "b", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
