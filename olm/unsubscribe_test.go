package olm

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// TestWaitGoneNudges: an object whose controller removes its finalizer
// only when woken by an update (a controller in a long backoff) goes
// within the wait, because waitGone nudges it; one nobody finalizes fails
// the wait, naming the finalizer.
func TestWaitGoneNudges(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	terminating := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: []string{"example.com/cleanup"}}}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}

	t.Run("a controller that needs waking", func(t *testing.T) {
		cm := terminating("woken")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				var got corev1.ConfigMap
				if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
					continue
				}
				if got.Annotations[NudgedAnnotation] != "" {
					got.Finalizers = nil
					_ = c.Update(ctx, &got)
				}
			}
		}()
		u := &unsubscriber{c: c, opts: UnsubscribeOptions{Timeout: 2 * nudgeEvery}}
		if err := u.waitGone(ctx, cm); err != nil {
			t.Fatalf("waitGone: %v", err)
		}
	})

	t.Run("a finalizer nobody removes", func(t *testing.T) {
		cm := terminating("stuck")
		u := &unsubscriber{c: c, opts: UnsubscribeOptions{Timeout: 2 * time.Second}}
		err := u.waitGone(ctx, cm)
		if err == nil || !strings.Contains(err.Error(), "finalizers example.com/cleanup") {
			t.Fatalf("waitGone: %v, want an error naming the finalizer", err)
		}
	})
}
