package realnode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/images"
)

// csiClient is a client that knows the VolumeSnapshot kinds.
func csiClient(t *testing.T, c *cluster.Cluster) client.Client {
	t.Helper()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, snapv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// claimOf is a claim of the CSI StorageClass, filled from src when set.
func claimOf(ns, name string, src *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(cluster.CSIStorageClass),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
			DataSource:       src,
		},
	}
}

// poll waits up to timeout for cond, failing the test with what.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// boundDir waits for a claim to bind and returns its volume's host directory.
func boundDir(t *testing.T, c *cluster.Cluster, cl client.Client, ns, name string) string {
	t.Helper()
	var dir string
	poll(t, 2*time.Minute, "claim "+name+" bound", func(ctx context.Context) (bool, error) {
		var pvc corev1.PersistentVolumeClaim
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pvc); err != nil || pvc.Status.Phase != corev1.ClaimBound {
			return false, nil
		}
		var pv corev1.PersistentVolume
		if err := cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
			return false, nil
		}
		dir = c.VolumeDir(&pv)
		return true, nil
	})
	if dir == "" {
		t.Fatalf("claim %s is not bound to a volume of %s", name, cluster.CSIDriver)
	}
	return dir
}

// TestCSIOnRealNode: the cluster's CSI driver provisions a claim, a pod
// mounts it (the kubelet found the driver through its registration), a
// VolumeSnapshot of it becomes ready, a claim made from the snapshot holds
// the files as they were, and deleting them removes the driver's copies.
func TestCSIOnRealNode(t *testing.T) {
	c := realCluster(t)
	cl := csiClient(t, c)
	ctx := t.Context()
	ns := "csi"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := cl.Create(ctx, claimOf(ns, "data", nil)); err != nil {
		t.Fatal(err)
	}
	dir := boundDir(t, c, cl, ns, "data")
	t.Logf("claim bound to a CSI volume in %s", time.Since(began).Round(10*time.Millisecond))
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: ns},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
			Containers: []corev1.Container{{Name: "web", Image: c.Image(images.HelloServer),
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	began = time.Now()
	if err := cl.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "pod mounting the CSI volume running", func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning, nil
	})
	t.Logf("pod mounting the volume running in %s", time.Since(began).Round(10*time.Millisecond))

	snap := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: ns},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
	}
	began = time.Now()
	if err := cl.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	poll(t, 2*time.Minute, "VolumeSnapshot ready", func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(snap), snap)
		return err == nil && snap.Status != nil && ptr.Deref(snap.Status.ReadyToUse, false), nil
	})
	t.Logf("snapshot ready in %s (class %s, content %s)", time.Since(began).Round(10*time.Millisecond),
		ptr.Deref(snap.Spec.VolumeSnapshotClassName, ""), ptr.Deref(snap.Status.BoundVolumeSnapshotContentName, ""))
	if err := os.WriteFile(filepath.Join(dir, "marker"), []byte("after"), 0o644); err != nil {
		t.Fatal(err)
	}

	began = time.Now()
	src := &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapv1.GroupName), Kind: "VolumeSnapshot", Name: "snap"}
	if err := cl.Create(ctx, claimOf(ns, "restored", src)); err != nil {
		t.Fatal(err)
	}
	restored := boundDir(t, c, cl, ns, "restored")
	t.Logf("claim restored from the snapshot in %s", time.Since(began).Round(10*time.Millisecond))
	if data, err := os.ReadFile(filepath.Join(restored, "marker")); err != nil || string(data) != "before" {
		t.Errorf("restored marker %q, %v; want %q", data, err, "before")
	}

	for _, obj := range []client.Object{pod, snap, claimOf(ns, "restored", nil), claimOf(ns, "data", nil)} {
		if err := cl.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 2*time.Minute, "volumes and snapshot contents deleted", func(ctx context.Context) (bool, error) {
		var contents snapv1.VolumeSnapshotContentList
		var pvs corev1.PersistentVolumeList
		if err := cl.List(ctx, &contents); err != nil {
			return false, err
		}
		if err := cl.List(ctx, &pvs); err != nil {
			return false, err
		}
		return len(contents.Items) == 0 && len(pvs.Items) == 0, nil
	})
	for _, d := range []string{dir, restored} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("volume directory %s left: %v", d, err)
		}
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(snap), snap); !apierrors.IsNotFound(err) {
		t.Errorf("snapshot left: %v", err)
	}
}
