package metricsauth

import (
	"context"
	"errors"
	"sync"
)

// errAbandoned is what the callers sharing a call get when the call
// panicked instead of returning: they are refused, never let through.
var errAbandoned = errors.New("the shared review did not complete")

// flight shares one call among the concurrent callers with the same key,
// so that a burst of requests with one unseen token (or one unseen access
// question) costs one review, not one each.
type flight[V any] struct {
	mu    sync.Mutex
	calls map[key]*call[V]
	// joined, when set, runs each time a caller joins a call in flight:
	// tests wait on it to know that every caller is in.
	joined func()
}

// call is a call in flight; done is closed when value and err are set.
type call[V any] struct {
	done  chan struct{}
	value V
	err   error
}

// do returns fn's result, from the call in flight under k if there is one,
// else by calling fn. A caller who joins stops waiting when its ctx is
// done; the call goes on for the others.
func (g *flight[V]) do(ctx context.Context, k key, fn func() (V, error)) (V, error) {
	g.mu.Lock()
	if c, ok := g.calls[k]; ok {
		g.mu.Unlock()
		if g.joined != nil {
			g.joined()
		}
		return c.wait(ctx)
	}
	c := &call[V]{done: make(chan struct{}), err: errAbandoned}
	if g.calls == nil {
		g.calls = make(map[key]*call[V])
	}
	g.calls[k] = c
	g.mu.Unlock()

	defer func() {
		g.mu.Lock()
		delete(g.calls, k)
		g.mu.Unlock()
		close(c.done)
	}()
	c.value, c.err = fn()
	return c.value, c.err
}

func (c *call[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-c.done:
		return c.value, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}
