package realnode

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// TestSnapshotsOnRealNode: a Vault whose claim is of the CSI
// StorageClass holds -volume-mib of random bytes; it is backed up by a VolumeSnapshot and by a
// copy, the CR and claim are deleted, restored from the snapshot (the bytes
// compared) and from the copy (timed against it), and restored from the
// snapshot into another namespace under another name. A backup that must
// snapshot a claim whose driver has no VolumeSnapshotClass fails with
// SnapshotClassMissing and makes nothing. Deleting the snapshot backup
// deletes its snapshot.
func TestSnapshotsOnRealNode(t *testing.T) {
	c := realCluster(t)
	bundleDir, image := project(t, c)
	projectDir := filepath.Dir(bundleDir)
	ctx := t.Context()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl := csiClient(t, c)
	dyn := dynamic.NewForConfigOrDie(cfg)
	installCRDs(t, projectDir, cfg)
	const ns, other = "snap", "snap-copy"
	defer startOperator(t, cfg, projectDir, image, ns, other)()
	cr := crs{t, dyn}
	res, create := cr.resource, cr.create
	backups, restores := res(api.BackupKind(vaultGVK), ns), res(api.RestoreKind(vaultGVK), ns)
	operand := map[string]any{"repository": images.Repository(c.RegistryAddr(), images.HelloServer), "tag": "local"}
	create(vaultGVK, ns, "big", map[string]any{"size": "2Gi", "storageClass": cluster.CSIStorageClass, "image": operand})
	waitCR(t, res(vaultGVK, ns), "big")
	want := fillDir(t, boundDir(t, c, cl, ns, "big-data"))
	target := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backups", Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
	}}
	if err := cl.Create(ctx, target); err != nil {
		t.Fatal(err)
	}
	toClaim := map[string]any{"pvc": map[string]any{"claimName": "backups"}}

	timed := func(what string, ri dynamic.ResourceInterface, name string) map[string]any {
		t.Helper()
		began := time.Now()
		st := waitDone(t, ri, name)
		took := time.Since(began)
		t.Logf("%s: %s (status duration %v), %.0f MiB/s; volumes %v", what, took.Round(100*time.Millisecond), st["duration"],
			float64(dataSize())/took.Seconds()/(1<<20), st["volumes"])
		return st
	}
	create(api.BackupKind(vaultGVK), ns, "by-snapshot", map[string]any{"source": "big", "target": toClaim, "volumeMethod": "snapshot"})
	st := timed("backup of "+volume()+" by VolumeSnapshot", backups, "by-snapshot")
	vol := firstVolume(t, st)
	if vol["method"] != string(api.VolumeMethodSnapshot) || vol["snapshot"] == nil || vol["duration"] == nil {
		t.Errorf("the claim's result %v, want method snapshot with its snapshot and duration", vol)
	}
	create(api.BackupKind(vaultGVK), ns, "by-copy", map[string]any{"source": "big", "target": toClaim, "volumeMethod": "copy"})
	if vol := firstVolume(t, timed("backup of "+volume()+" by copy to a claim", backups, "by-copy")); vol["method"] != string(api.VolumeMethodCopy) {
		t.Errorf("the copy backup's claim result %v, want method copy", vol)
	}

	lose := func() {
		t.Helper()
		if err := res(vaultGVK, ns).Delete(ctx, "big", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, func() error { _, err := res(vaultGVK, ns).Get(ctx, "big", metav1.GetOptions{}); return err })
		// The chart's claim may be gone with its release already.
		if err := cl.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "big-data", Namespace: ns}}); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		gone(t, func() error {
			return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big-data"}, &corev1.PersistentVolumeClaim{})
		})
	}
	lose()
	create(api.RestoreKind(vaultGVK), ns, "from-snapshot", map[string]any{"backupName": "by-snapshot"})
	timed("restore of "+volume()+" from the VolumeSnapshot, the release Deployed and Ready", restores, "from-snapshot")
	checkDir(t, boundDir(t, c, cl, ns, "big-data"), ns+"/big-data", want)
	lose()
	create(api.RestoreKind(vaultGVK), ns, "from-copy", map[string]any{"backupName": "by-copy"})
	timed("restore of "+volume()+" from the copy, the release Deployed and Ready", restores, "from-copy")
	checkDir(t, boundDir(t, c, cl, ns, "big-data"), ns+"/big-data", want)

	create(api.RestoreGrantKind(vaultGVK), other, "from-"+ns, map[string]any{"from": []any{map[string]any{"namespace": ns}}})
	create(api.RestoreKind(vaultGVK), ns, "elsewhere", map[string]any{"backupName": "by-snapshot", "targetNamespace": other, "targetName": "copy"})
	timed("restore of "+volume()+" from the VolumeSnapshot into namespace "+other+" as copy", restores, "elsewhere")
	checkDir(t, boundDir(t, c, cl, other, "copy-data"), other+"/copy-data", want)
	var copies snapv1.VolumeSnapshotList
	if err := cl.List(ctx, &copies, client.InNamespace(other)); err != nil || len(copies.Items) > 0 {
		t.Errorf("snapshot copies left in %s: %v, %v", other, copies.Items, err)
	}

	t.Run("SnapshotClassMissing", func(t *testing.T) {
		// The default StorageClass is the in-tree hostPath one: no VolumeSnapshotClass.
		create(vaultGVK, ns, "plain", map[string]any{"image": operand})
		waitCR(t, res(vaultGVK, ns), "plain")
		create(api.BackupKind(vaultGVK), ns, "must-snapshot", map[string]any{"source": "plain", "target": toClaim, "volumeMethod": "snapshot"})
		st := waitEnd(t, backups, "must-snapshot")
		msg := fmt.Sprint(st["message"])
		if st["reason"] != backup.ReasonSnapshotClassMissing || !strings.Contains(msg, "claim plain-data") || !strings.Contains(msg, "StorageClass "+cluster.StorageClass) {
			t.Errorf("a claim without a snapshot class: %v: %v", st["reason"], msg)
		}
		t.Logf("%v: %v", st["reason"], msg)
		var made snapv1.VolumeSnapshotList
		if err := cl.List(ctx, &made, client.InNamespace(ns), client.MatchingLabels{api.BackupLabel: "must-snapshot"}); err != nil || len(made.Items) > 0 {
			t.Errorf("snapshots made: %v, %v", made.Items, err)
		}
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{api.BackupLabel: "must-snapshot"}); err != nil || len(pods.Items) > 0 {
			t.Errorf("mover pods made: %d, %v", len(pods.Items), err)
		}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plain-data"}, &corev1.PersistentVolumeClaim{}); err != nil {
			t.Errorf("the claim: %v", err)
		}
	})

	t.Run("deleting the backup deletes its snapshot", func(t *testing.T) {
		if err := backups.Delete(ctx, "by-snapshot", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, 2*time.Minute, "the snapshot and its content deleted", func(ctx context.Context) (bool, error) {
			var snaps snapv1.VolumeSnapshotList
			var contents snapv1.VolumeSnapshotContentList
			if err := cl.List(ctx, &snaps, client.InNamespace(ns)); err != nil {
				return false, err
			}
			if err := cl.List(ctx, &contents); err != nil {
				return false, err
			}
			return len(snaps.Items) == 0 && len(contents.Items) == 0, nil
		})
		if left, _ := filepath.Glob(filepath.Join(c.StateDir(), "csi", "snapshots", "*")); len(left) > 0 {
			t.Errorf("the driver's snapshot copies left: %v", left)
		}
	})
}

// firstVolume is the first claim result of a backup's status.
func firstVolume(t *testing.T, st map[string]any) map[string]any {
	t.Helper()
	vols, _ := st["volumes"].([]any)
	if len(vols) == 0 {
		t.Fatalf("no volume results in %v", st)
	}
	v, _ := vols[0].(map[string]any)
	return v
}
