package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// A claim that names no StorageClass binds to a volume of the default one,
// a directory under cluster.HostPathDir, and deleting the claim deletes the
// volume and its directory.
func TestClaimBindsToAHostPathVolume(t *testing.T) {
	clustertest.SkipIfShort(t)
	cs, _ := clients(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	began := time.Now()
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var bound *corev1.PersistentVolumeClaim
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc.Name, metav1.GetOptions{})
		bound = got
		return err == nil && got.Status.Phase == corev1.ClaimBound, nil
	})
	if err != nil {
		t.Fatalf("claim not bound: %+v", bound.Status)
	}
	t.Logf("claim bound in %s", time.Since(began).Round(10*time.Millisecond))
	if sc := bound.Spec.StorageClassName; sc == nil || *sc != cluster.StorageClass {
		t.Errorf("storage class %v, want the default %s", sc, cluster.StorageClass)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, bound.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil || filepath.Dir(pv.Spec.HostPath.Path) != cluster.HostPathDir {
		t.Fatalf("volume %s source %+v, want a directory under %s", pv.Name, pv.Spec.PersistentVolumeSource, cluster.HostPathDir)
	}
	dir := pv.Spec.HostPath.Path
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("volume directory %s: %v", dir, err)
	}

	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("volume %s not deleted with its claim", pv.Name)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("volume directory %s remains after its volume was deleted: %v", dir, err)
	}
}
