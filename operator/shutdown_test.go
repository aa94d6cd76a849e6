package operator

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// A controller configured as the operator's stops when asked, however busy
// its queue. controller-runtime v0.24's priority queue can deadlock on
// shutdown (a ready item handed to a worker that already left), and the
// operator then hung for the manager's whole grace period: TestSecretsStayOut
// failed so under load. Many busy shutdowns in a row find that race.
func TestControllerShutdownNeverHangs(t *testing.T) {
	for round := range 200 {
		if err := busyShutdown(round); err != nil {
			t.Fatal(err)
		}
	}
}

// busyShutdown runs a controller whose every reconcile requeues at once,
// stops it mid-flight and says whether it ended.
func busyShutdown(round int) error {
	events := make(chan event.GenericEvent)
	c, err := controller.NewUnmanaged(fmt.Sprintf("busy-%d", round), controller.Options{
		MaxConcurrentReconciles: 8,
		UsePriorityQueue:        controllerConfig().UsePriorityQueue,
		SkipNameValidation:      ptr.To(true),
		Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{RequeueAfter: time.Microsecond}, nil
		}),
	})
	if err != nil {
		return err
	}
	if err := c.Watch(source.Channel(events, &handler.EnqueueRequestForObject{})); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	for i := range 64 {
		events <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cr-%d", i)}}}
	}
	time.Sleep(time.Millisecond)
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("round %d: the controller did not stop within 10s of its context's end", round)
	}
}
