package reconciler

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Backoff spaces the attempts of a release that keeps failing: Initial after
// the first failure, doubling up to Max. Zero values take 1s and 5m.
type Backoff struct {
	Initial, Max time.Duration
}

// The backoff of a zero Backoff.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
)

func (b Backoff) delay(failures int) time.Duration {
	return b.delayWith(failures, rand.N[time.Duration])
}

// delayWith is delay with the jitter drawn by jitter(n), a duration in [0, n)
// (rand.N in the operator; a fixed source in tests).
func (b Backoff) delayWith(failures int, jitter func(time.Duration) time.Duration) time.Duration {
	initial, limit := b.Initial, b.Max
	if initial <= 0 {
		initial = DefaultBackoffInitial
	}
	if limit <= 0 {
		limit = DefaultBackoffMax
	}
	d := initial
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	// Up to a tenth more, so that CRs failing together spread out.
	return d + jitter(d/10+1)
}

// failure is a CR's failures of its current attempt and when the next may
// start. An attempt is identified by what could change its outcome: the
// chart, the values and the CR's annotations. Events of the release's
// objects (the operator's own writes, other controllers' bookkeeping)
// change none of these, so they cannot start a new attempt early; a change
// to the CR or a new chart starts one at once. Success resets it.
type failure struct {
	attempt  string
	failures int
	next     time.Time
}

// wait is how long the CR must wait before trying attempt; 0 when it may try now.
func (f failure) wait(attempt string, now time.Time) time.Duration {
	if f.attempt != attempt || !now.Before(f.next) {
		return 0
	}
	return f.next.Sub(now)
}

// failed records a failure of attempt and returns the delay before the next.
// A failure to reach the API server says nothing about the release: it is
// retried after the initial delay, without counting, so that the operator
// resumes within moments of the server's return however long it was away.
func (f *failure) failed(policy Backoff, attempt string, now time.Time, unreachable bool) time.Duration {
	if f.attempt != attempt {
		*f = failure{attempt: attempt}
	}
	d := policy.delay(1)
	if !unreachable {
		f.failures++
		d = policy.delay(f.failures)
	}
	f.next = now.Add(d)
	return d
}

// unreachable says the error is the API server's absence (refused, reset or
// timed-out connections, 503s and 429s), not the release's failure.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err)
}

// attemptKey identifies an attempt by the release digest (chart and values)
// and the CR's annotations (which choose forces, hooks and waits; changing
// one is also how a user asks for a new attempt at once).
func attemptKey(digest string, annotations map[string]string) string {
	h := sha256.New()
	h.Write([]byte(digest))
	keys := slices.Sorted(maps.Keys(annotations))
	for _, k := range keys {
		h.Write([]byte("\x00" + k + "\x00" + annotations[k]))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
