package backup_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

func reasonOf(want string) func(api.Phase, string) bool {
	return func(_ api.Phase, r string) bool { return r == want }
}

// A Backup deleted while a Restore reads it stays, its status naming the
// Restore, and nothing of its archives is touched; a Restore created then
// fails at once (BackupDeleting). Once the running Restore completed, the
// archives are deleted and the Backup goes.
func TestDeleteBackupWaitsForItsRestore(t *testing.T) {
	w := newWorld(t)
	w.completedBackup()
	w.create(restoreGVK, "back", map[string]any{"backupName": "nightly", "targetName": "copy"})
	w.status(restoreGVK, "back", phaseIs(api.PhaseRunning))

	w.deleteBackup("nightly")
	st := w.status(backupGVK, "nightly", reasonOf(backup.ReasonHeldByRestore))
	if msg, _ := st["message"].(string); !strings.Contains(msg, "Restore back") || st["phase"] != string(api.PhaseCompleted) {
		t.Errorf("held backup: %v", st)
	}
	w.create(restoreGVK, "late", map[string]any{"backupName": "nightly", "targetName": "late"})
	st = w.status(restoreGVK, "late", failedWith(backup.ReasonBackupDeleting))
	if msg, _ := st["message"].(string); !strings.Contains(msg, "nightly") {
		t.Errorf("restore of a backup being deleted: %v", msg)
	}
	time.Sleep(time.Second) // a few reconciles of the held Backup
	if n := w.leftIn(w.ns, api.BackupLabel+"=nightly"); n != 0 {
		t.Errorf("%d pod(s) deleting the archives while a restore reads them", n)
	}
	if _, err := w.res(backupGVK).Get(w.ctx, "nightly", metav1.GetOptions{}); err != nil {
		t.Fatalf("the backup went while its restore runs: %v", err)
	}

	w.kubelet(api.RestoreLabel+"=back", mover.Result{Size: 4096, Files: 1})
	w.bind("copy-data")
	w.status(restoreGVK, "back", phaseIs(api.PhaseCompleted))
	w.kubelet(api.BackupLabel+"=nightly,backup.chartpilot.io/mover=delete", mover.Result{Files: 1})
	w.backupGone("nightly")
	w.event("nightly", "ArchivesDeleted")
}
