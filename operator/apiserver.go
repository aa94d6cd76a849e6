package operator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/singleflight"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// serverGate makes the informers' reads wait for an API server that is away
// (its port refuses connections) and go the moment it answers again.
// Without it, a reflector retries on client-go's own backoff, which grows to
// 30-60 s over an outage and delays the first watch after the server's return
// by as much; reconciles of changes made meanwhile wait for that watch.
type serverGate struct {
	// ready asks the API server whether it serves (its /readyz).
	ready func(ctx context.Context) error
	// poll is how often ready is asked while the server is away.
	poll time.Duration
	// outage bounds one wait, after which the reflector's own retries go on.
	outage time.Duration
	group  singleflight.Group
}

func newServerGate(cfg *rest.Config) (*serverGate, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for the API server's readiness: %w", err)
	}
	client := cs.Discovery().RESTClient()
	return &serverGate{
		ready: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return client.Get().AbsPath("/readyz").Do(ctx).Error()
		},
		poll:   250 * time.Millisecond,
		outage: 10 * time.Minute,
	}, nil
}

// wait returns once the API server is ready, the outage bound passed or ctx
// ended. Every caller waiting at once shares one probe.
func (g *serverGate) wait(ctx context.Context) {
	_, _, _ = g.group.Do("ready", func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, g.outage)
		defer cancel()
		return nil, wait.PollUntilContextCancel(ctx, g.poll, true, func(ctx context.Context) (bool, error) {
			return g.ready(ctx) == nil, nil
		})
	})
}

// newCache builds the manager's cache over a transport that, when a read is
// refused a connection, waits for the server and tries once more.
func (g *serverGate) newCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return gatedTransport{next: rt, gate: g} })
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("the cache's HTTP client: %w", err)
	}
	opts.HTTPClient = hc
	return cache.New(cfg, opts)
}

type gatedTransport struct {
	next http.RoundTripper
	gate *serverGate
}

func (t gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	// Only reads are retried: a GET has no body to replay and no effect.
	if err == nil || req.Method != http.MethodGet || !utilnet.IsConnectionRefused(err) {
		return resp, err
	}
	t.gate.wait(req.Context())
	if req.Context().Err() != nil {
		return nil, err
	}
	return t.next.RoundTrip(req)
}

// waitAPIServer waits until the API server answers its readiness, however
// long that takes, or ctx ends.
func waitAPIServer(ctx context.Context, cfg *rest.Config) error {
	g, err := newServerGate(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, g.poll, true, func(ctx context.Context) (bool, error) {
		return g.ready(ctx) == nil, nil
	})
}

// waitBindable waits, for at most 10 s, until each address ("" and "0"
// skipped) can be listened on again.
func waitBindable(ctx context.Context, addrs ...string) error {
	for _, addr := range addrs {
		if addr == "" || addr == "0" {
			continue
		}
		var last error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			l, err := net.Listen("tcp", addr)
			if last = err; err != nil {
				return false, nil
			}
			return true, l.Close()
		})
		if err != nil {
			return fmt.Errorf("listening on %s again: %w (%w)", addr, last, err)
		}
	}
	return nil
}
