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

// TestWaitGoneNamesFinalizers: the wait for an object nobody finalizes
// fails, naming the finalizer.
func TestWaitGoneNamesFinalizers(t *testing.T) {
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

	t.Run("a finalizer nobody removes", func(t *testing.T) {
		cm := terminating("stuck")
		u := &unsubscriber{c: c, opts: UnsubscribeOptions{Timeout: 2 * time.Second}}
		err := u.waitGone(ctx, cm)
		if err == nil || !strings.Contains(err.Error(), "finalizers example.com/cleanup") {
			t.Fatalf("waitGone: %v, want an error naming the finalizer", err)
		}
	})
}
