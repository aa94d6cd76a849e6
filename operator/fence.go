package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// errFenced is what a request of a stepped-down leader's clients gets.
var errFenced = errors.New("this operator stepped down as leader: its requests of that term are refused")

// fence bounds a term of leadership: every client of the term is built
// from fence.wrap's config, and once the term ends (close), its requests
// in flight are cancelled and new ones refused. Helm goes on with an
// action whose context ended in a goroutine of its own, so only this makes
// sure that nothing of an old term writes after a new term began.
type fence struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inFlight int
	drained  chan struct{} // closed when closed and inFlight is 0
}

func newFence() *fence {
	ctx, cancel := context.WithCancel(context.Background())
	return &fence{ctx: ctx, cancel: cancel, drained: make(chan struct{})}
}

// wrap returns a copy of cfg whose requests pass the fence.
func (f *fence) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{next: rt, f: f} })
	return cfg
}

// close refuses new requests, cancels those in flight and waits until
// each has returned, or ctx ends.
func (f *fence) close(ctx context.Context) error {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		if f.inFlight == 0 {
			close(f.drained)
		}
	}
	f.mu.Unlock()
	f.cancel()
	select {
	case <-f.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fence) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.inFlight++
	return true
}

func (f *fence) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inFlight--
	if f.closed && f.inFlight == 0 {
		close(f.drained)
	}
}

type fencedTransport struct {
	next http.RoundTripper
	f    *fence
}

// RoundTrip counts a request in flight until its response's headers came
// (the server has acted by then); reading the body, a watch's stream too,
// ends with the term.
func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.f.enter() {
		return nil, errFenced
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(t.f.ctx, cancel)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	t.f.leave()
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &fencedBody{ReadCloser: resp.Body, done: func() { stop(); cancel() }}
	return resp, nil
}

type fencedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *fencedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
