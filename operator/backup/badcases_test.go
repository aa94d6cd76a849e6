package backup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
	"github.com/chartpilot/chartpilot/operator/reconciler"
)

// Each bad case ends in a clear status reason, and nothing the backup or
// restore read is deleted or changed: the Store, its claim and its data.
func TestBadCases(t *testing.T) {
	tests := []struct {
		name string
		// act creates what fails; it returns the kind and name to watch.
		act func(w *world) (kindIsRestore bool, name string)
		// reason is the status reason expected; message a part of it.
		reason, message string
		// noMover: no mover pod may have been created.
		noMover bool
	}{
		{
			name: "target unreachable",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", backupSpec("shop", "no-such-claim"))
				return false, "b"
			},
			reason: backup.ReasonTargetUnavailable, message: "no-such-claim", noMover: true,
		},
		{
			name: "S3 target unreachable",
			act: func(w *world) (bool, string) {
				w.secret("s3-creds", map[string]string{api.S3AccessKeyIDKey: "id", api.S3SecretAccessKeyKey: "s3cr3t-never-logged"})
				// Nothing listens on port 1 of loopback.
				w.create(backupGVK, "b", s3Spec("shop", "127.0.0.1:1", "s3-creds"))
				return false, "b"
			},
			reason: backup.ReasonTargetUnavailable, message: "s3://backups/ at 127.0.0.1:1", noMover: true,
		},
		{
			name: "S3 credentials missing",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", s3Spec("shop", "127.0.0.1:1", "no-such-secret"))
				return false, "b"
			},
			reason: backup.ReasonTargetUnavailable, message: "no-such-secret", noMover: true,
		},
		{
			name: "source missing",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", backupSpec("no-such-store", "backups"))
				return false, "b"
			},
			reason: backup.ReasonSourceNotFound, message: "no-such-store", noMover: true,
		},
		{
			name: "target full: the mover fails",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", backupSpec("shop", "backups"))
				w.kubelet(api.BackupLabel+"=b", mover.Result{Error: "write /archive/x.tar.gz.partial: no space left on device"})
				return false, "b"
			},
			reason: backup.ReasonMoverFailed, message: "no space left on device",
		},
		{
			name: "pre hook fails",
			act: func(w *world) (bool, string) {
				w.hookPod("db-0", map[string]string{"pre.hook.backup.velero.io/command": `["/bin/sh","-c","exit 3"]`, "pre.hook.backup.velero.io/container": "db"})
				w.create(backupGVK, "b", backupSpec("shop", "backups"))
				return false, "b"
			},
			reason: backup.ReasonHookFailed, message: "pod db-0, container db", noMover: true,
		},
		{
			name: "hook annotation malformed",
			act: func(w *world) (bool, string) {
				w.hookPod("db-0", map[string]string{"pre.hook.backup.velero.io/command": `["unterminated`})
				w.create(backupGVK, "b", backupSpec("shop", "backups"))
				return false, "b"
			},
			reason: backup.ReasonHookFailed, message: "not a JSON list", noMover: true,
		},
		{
			name: "CR mid-upgrade",
			act: func(w *world) (bool, string) {
				// Paused, the operator leaves the new spec undeployed: the
				// state of an upgrade that has not finished.
				w.patchCR("shop", `{"metadata":{"annotations":{"`+reconciler.AnnotationPaused+`":"true"}}}`)
				w.patchCR("shop", `{"spec":{"greeting":"changed"}}`)
				spec := backupSpec("shop", "backups")
				spec["waitTimeout"] = "4s"
				w.create(backupGVK, "b", spec)
				w.status(backupGVK, "b", func(p api.Phase, r string) bool {
					return p == api.PhasePending && r == backup.ReasonWaitingForRelease
				})
				return false, "b"
			},
			reason: backup.ReasonReleaseNotSettled, message: "an upgrade is due", noMover: true,
		},
		{
			name: "restore where the CR exists",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", backupSpec("shop", "backups"))
				w.kubelet(api.BackupLabel+"=b", mover.Result{Size: 10, Files: 1})
				w.status(backupGVK, "b", phaseIs(api.PhaseCompleted))
				w.create(restoreGVK, "r", map[string]any{"backupName": "b"})
				return true, "r"
			},
			reason: backup.ReasonAlreadyExists, message: "Store shop, PersistentVolumeClaim shop-data, Secret shop-password, ConfigMap shop-config exist",
		},
		{
			name: "restore of a backup not completed",
			act: func(w *world) (bool, string) {
				w.create(backupGVK, "b", backupSpec("shop", "no-such-claim"))
				w.status(backupGVK, "b", phaseIs(api.PhaseFailed))
				w.create(restoreGVK, "r", map[string]any{"backupName": "b"})
				return true, "r"
			},
			reason: backup.ReasonBackupNotCompleted, message: `"Failed"`, noMover: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.store("shop", map[string]any{"greeting": "bonjour"})
			w.claim("backups")
			before := w.snapshot("shop")
			restore, name := tt.act(w)
			gvk := backupGVK
			if restore {
				gvk = restoreGVK
			}
			st := w.status(gvk, name, failedWith(tt.reason))
			if msg, _ := st["message"].(string); !strings.Contains(msg, tt.message) {
				t.Errorf("message %q does not say %q", msg, tt.message)
			}
			if after := w.snapshot("shop"); after != before {
				t.Errorf("the Store or its claim changed:\nbefore %s\nafter  %s", before, after)
			}
			if tt.noMover {
				pods, _ := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: "backup.chartpilot.io/mover"})
				if len(pods.Items) > 0 {
					t.Errorf("a mover pod was created: %s", pods.Items[0].Name)
				}
			}
			w.noSecretsShown(gvk, name)
		})
	}
}

// A backup whose operator restarts while it copies resumes: the new
// operator finds the mover pod by its name, or creates it again when it
// is gone, and completes only once it succeeded.
func TestBackupSurvivesOperatorRestart(t *testing.T) {
	w := newWorld(t)
	w.store("shop", nil)
	w.claim("backups")
	w.create(backupGVK, "b", backupSpec("shop", "backups"))
	w.status(backupGVK, "b", phaseIs(api.PhaseRunning))
	pods, err := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: api.BackupLabel + "=b"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("mover pods: %v, %v", pods, err)
	}
	name := pods.Items[0].Name
	w.stop()
	// The pod is lost with the operator (evicted, say).
	if err := w.cs.CoreV1().Pods(w.ns).Delete(w.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	w.stop = w.startOperator()
	err = wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := w.cs.CoreV1().Pods(w.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the restarted operator did not create mover pod %s again", name)
	}
	if st := w.status(backupGVK, "b", func(api.Phase, string) bool { return true }); st["phase"] != string(api.PhaseRunning) {
		t.Fatalf("backup %v before its pod succeeded", st["phase"])
	}
	w.kubelet(api.BackupLabel+"=b", mover.Result{Size: 1, Files: 1})
	w.status(backupGVK, "b", phaseIs(api.PhaseCompleted))
}

func s3Spec(source, endpoint, secret string) map[string]any {
	return map[string]any{"source": source, "target": map[string]any{"s3": map[string]any{
		"endpoint": endpoint, "bucket": "backups", "insecure": true, "credentialsSecret": secret,
	}}}
}

func (w *world) secret(name string, data map[string]string) {
	w.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
	if _, err := w.cs.CoreV1().Secrets(w.ns).Create(w.ctx, s, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// hookPod creates a running pod of the release with annotations.
func (w *world) hookPod(name string, annotations map[string]string) {
	w.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/instance": "shop"}, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web"}, {Name: "db", Image: "db"}}},
	}
	created, err := w.cs.CoreV1().Pods(w.ns).Create(w.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := w.cs.CoreV1().Pods(w.ns).UpdateStatus(w.ctx, created, metav1.UpdateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) patchCR(name, patch string) {
	w.t.Helper()
	if _, err := w.res(storeGVK).Patch(w.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// snapshot is the Store's spec and its claim's identity and phase.
func (w *world) snapshot(name string) string {
	w.t.Helper()
	cr, err := w.res(storeGVK).Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "Store: " + err.Error()
	}
	pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(w.ctx, name+"-data", metav1.GetOptions{})
	if err != nil {
		return "claim: " + err.Error()
	}
	return strings.Join([]string{string(cr.GetUID()), string(pvc.UID), string(pvc.Status.Phase), pvc.ResourceVersion, fmt.Sprint(cr.GetDeletionTimestamp() != nil)}, " ")
}
