package metricsauth

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// A call that panics fails the callers who joined it: with an error, never
// with a zero value as if it had answered.
func TestFlightPanic(t *testing.T) {
	var g flight[bool]
	joined := make(chan struct{})
	g.joined = func() { close(joined) }
	started := make(chan struct{})

	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() { _ = recover() }()
		_, _ = g.do(context.Background(), k("a"), func() (bool, error) {
			close(started)
			<-joined
			panic("the review panicked")
		})
	})
	await(t, started, "the call to start")
	var err error
	wg.Go(func() {
		_, err = g.do(context.Background(), k("a"), func() (bool, error) { return true, nil })
	})
	wg.Wait()
	if !errors.Is(err, errAbandoned) {
		t.Errorf("the caller who joined got %v, want errAbandoned", err)
	}
}
