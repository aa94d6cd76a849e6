package backup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/chartpilot/chartpilot/internal/volumesnapshot"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

var (
	snapshotRes = snapv1.SchemeGroupVersion.WithResource("volumesnapshots")
	classRes    = snapv1.SchemeGroupVersion.WithResource("volumesnapshotclasses")
)

// csiClass makes a StorageClass of this world's own driver, with a default
// VolumeSnapshotClass for it, and returns the StorageClass's name.
func (w *world) csiClass() string {
	w.t.Helper()
	name, driver := w.ns, w.ns+".csi.test"
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: driver}
	if _, err := w.cs.StorageV1().StorageClasses().Create(w.ctx, sc, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapv1.SchemeGroupVersion.String(), "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": name, "annotations": map[string]any{volumesnapshot.DefaultClassAnnotation: "true"}},
		"driver":   driver, "deletionPolicy": "Delete",
	}}
	if _, err := w.dyn.Resource(classRes).Create(w.ctx, class, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		_ = w.cs.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = w.dyn.Resource(classRes).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func (w *world) snapshots() dynamic.ResourceInterface {
	return w.dyn.Resource(snapshotRes).Namespace(w.ns)
}

// snapshotReady marks the backup's VolumeSnapshots ready, as the snapshot
// controller would once the driver cut them, and returns them.
func (w *world) snapshotReady(backupName string) []unstructured.Unstructured {
	w.t.Helper()
	var list *unstructured.UnstructuredList
	err := wait.PollUntilContextTimeout(w.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		list, err = w.snapshots().List(ctx, metav1.ListOptions{LabelSelector: api.BackupLabel + "=" + backupName})
		return err == nil && len(list.Items) > 0, nil
	})
	if err != nil {
		w.t.Fatalf("no VolumeSnapshot of backup %s", backupName)
	}
	for i := range list.Items {
		vs := &list.Items[i]
		vs.Object["status"] = map[string]any{"readyToUse": true, "restoreSize": "1Gi", "boundVolumeSnapshotContentName": "content-" + vs.GetName()}
		if _, err := w.snapshots().UpdateStatus(w.ctx, vs, metav1.UpdateOptions{}); err != nil {
			w.t.Fatal(err)
		}
	}
	return list.Items
}

// A claim whose driver has a default VolumeSnapshotClass is kept by a
// VolumeSnapshot (no mover pod), the result says so; a restore recreates
// the claim with the snapshot as its dataSource, before the CR. A backup
// that must snapshot with a class the driver lacks fails with
// SnapshotClassMissing, naming the claim and class, and makes nothing.
// Deleting the backup deletes its snapshot.
func TestSnapshotBackupAndRestore(t *testing.T) {
	w := newWorld(t)
	class := w.csiClass()
	w.store("shop", map[string]any{"storageClass": class})
	w.claim("backups")

	w.create(backupGVK, "bad", map[string]any{"source": "shop", "target": map[string]any{"pvc": map[string]any{"claimName": "backups"}},
		"volumeMethod": "snapshot", "volumeSnapshotClassName": "nope"})
	st := w.status(backupGVK, "bad", failedWith(backup.ReasonSnapshotClassMissing))
	if msg := fmt.Sprint(st["message"]); !strings.Contains(msg, "claim shop-data") || !strings.Contains(msg, "VolumeSnapshotClass nope") || !strings.Contains(msg, "StorageClass "+class) {
		t.Errorf("SnapshotClassMissing message: %s", msg)
	}
	if made, _ := w.snapshots().List(w.ctx, metav1.ListOptions{LabelSelector: api.BackupLabel + "=bad"}); len(made.Items) > 0 {
		t.Errorf("a failed backup made %d snapshot(s)", len(made.Items))
	}

	w.create(backupGVK, "snap", backupSpec("shop", "backups"))
	st = w.status(backupGVK, "snap", func(p api.Phase, r string) bool { return p == api.PhaseRunning && r == backup.ReasonSnapshotting })
	snaps := w.snapshotReady("snap")
	src, _, _ := unstructured.NestedString(snaps[0].Object, "spec", "source", "persistentVolumeClaimName")
	cls, _, _ := unstructured.NestedString(snaps[0].Object, "spec", "volumeSnapshotClassName")
	if len(snaps) != 1 || src != "shop-data" || cls != class {
		t.Errorf("snapshot of %q with class %q (%d snapshots), want shop-data with %s", src, cls, len(snaps), class)
	}
	if pods, _ := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: api.BackupLabel + "=snap"}); len(pods.Items) > 0 {
		t.Errorf("a snapshot backup started %d mover pod(s)", len(pods.Items))
	}
	st = w.status(backupGVK, "snap", phaseIs(api.PhaseCompleted))
	vols, _ := st["volumes"].([]any)
	if len(vols) != 1 {
		t.Fatalf("volumes %v", st["volumes"])
	}
	v := vols[0].(map[string]any)
	if v["method"] != "snapshot" || v["snapshot"] != snaps[0].GetName() || v["size"] != int64(1<<30) || v["duration"] == nil {
		t.Errorf("volume result %v", v)
	}

	if err := w.res(storeGVK).Delete(w.ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.gone("Store shop", func() error { _, err := w.res(storeGVK).Get(w.ctx, "shop", metav1.GetOptions{}); return err })
	w.unprotect("shop-data")
	w.create(restoreGVK, "back", map[string]any{"backupName": "snap"})
	w.status(restoreGVK, "back", phaseIs(api.PhaseRunning))
	pvc, err := w.cs.CoreV1().PersistentVolumeClaims(w.ns).Get(w.ctx, "shop-data", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim is not recreated: %v", err)
	}
	if ds := pvc.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || ds.Name != snaps[0].GetName() || *ds.APIGroup != snapv1.GroupName {
		t.Errorf("restored claim's dataSource %+v, want VolumeSnapshot %s", ds, snaps[0].GetName())
	}
	if pods, _ := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: api.RestoreLabel + "=back"}); len(pods.Items) > 0 {
		t.Errorf("a snapshot restore started %d mover pod(s)", len(pods.Items))
	}
	w.bind("shop-data") // the provisioner filled it
	w.status(restoreGVK, "back", phaseIs(api.PhaseCompleted))

	w.deleteBackup("snap")
	w.backupGone("snap")
	w.gone("VolumeSnapshot "+snaps[0].GetName(), func() error {
		_, err := w.snapshots().Get(w.ctx, snaps[0].GetName(), metav1.GetOptions{})
		return err
	})
}
