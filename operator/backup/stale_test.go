package backup_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// A restore whose reconciles read it, right after each status write,
// from a cache that has not caught up with it (as an informer may) redoes
// no step: its mover pod is created once, and once the CR is restored no
// mover is created again to refill a claim already refilled. Before the
// fix, the stale read saw the volume still copying, found its mover
// deleted and started another, which fetched from a served archive that
// was gone and failed the restore after a minute (on the real node).
func TestRestoreThroughAStaleCache(t *testing.T) {
	w := newWorld(t)
	w.completedBackup()
	w.stop() // this test is the only reconciler
	w.create(restoreGVK, "stale", map[string]any{"backupName": "nightly", "targetName": "copy"})

	live, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cache := &behindClient{Client: live, stale: map[types.NamespacedName]*unstructured.Unstructured{}, created: map[string]int{}}
	r := backup.NewRestoreReconciler(backup.Options{Watched: storeGVK, Client: cache, Reader: live,
		Config: restConfig, MoverImage: moverImage, Log: testLog(t)})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.ns, Name: "stale"}}
	restored, extra := false, 0
	for i := 0; i < 50 && extra < 3; i++ {
		if _, err := r.Reconcile(w.ctx, req); err != nil && !apierrors.IsConflict(err) {
			t.Logf("reconcile %d: %v", i, err)
		}
		pods, err := w.cs.CoreV1().Pods(w.ns).List(w.ctx, metav1.ListOptions{LabelSelector: api.RestoreLabel + "=stale"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == "" || p.Status.Phase == corev1.PodPending {
				w.kubelet(api.RestoreLabel+"=stale", mover.Result{Size: 4096, Files: 1})
				w.bind("copy-data")
			}
		}
		st := w.status(restoreGVK, "stale", func(api.Phase, string) bool { return true })
		if st["phase"] == string(api.PhaseFailed) {
			t.Fatalf("restore failed: %v", st["message"])
		}
		if restored = restored || st["restored"] != nil; restored {
			extra++
		}
	}
	if !restored {
		t.Fatal("the CR was never restored")
	}
	for name, n := range cache.createdPods() {
		if n != 1 {
			t.Errorf("mover pod %s created %d times, want once", name, n)
		}
	}
	if len(cache.createdPods()) != 1 {
		t.Errorf("mover pods created: %v, want one", cache.createdPods())
	}
}

// behindClient reads a Restore, the first time after each status write
// made through it, as it was before that write; and counts the pods it
// creates.
type behindClient struct {
	client.Client
	mu      sync.Mutex
	stale   map[types.NamespacedName]*unstructured.Unstructured
	created map[string]int
}

func (c *behindClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	old, ok := c.stale[key]
	delete(c.stale, key) // caught up after one read
	c.mu.Unlock()
	if u, isU := obj.(*unstructured.Unstructured); ok && isU && u.GetKind() == restoreGVK.Kind {
		old.DeepCopyInto(u)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *behindClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	if _, isPod := obj.(*corev1.Pod); isPod && err == nil {
		c.mu.Lock()
		c.created[obj.GetName()]++
		c.mu.Unlock()
	}
	return err
}

func (c *behindClient) createdPods() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.created {
		out[k] = v
	}
	return out
}

func (c *behindClient) Status() client.SubResourceWriter {
	return behindStatus{SubResourceWriter: c.Client.Status(), c: c}
}

// behindStatus keeps the object as it was before each status write.
type behindStatus struct {
	client.SubResourceWriter
	c *behindClient
}

func (s behindStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	key := client.ObjectKeyFromObject(obj)
	if err := s.c.Client.Get(ctx, key, before); err != nil {
		return err
	}
	if err := s.SubResourceWriter.Update(ctx, obj, opts...); err != nil {
		return err
	}
	s.c.mu.Lock()
	s.c.stale[key] = before
	s.c.mu.Unlock()
	return nil
}
