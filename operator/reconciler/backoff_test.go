package reconciler

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The delay doubles from Initial up to Max (1 s and 5 min for a zero
// Backoff), and adds a jitter of up to a tenth: exact bounds with the jitter
// at either end of its range.
func TestBackoffDelay(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	most := func(n time.Duration) time.Duration { return n - 1 }
	custom := Backoff{Initial: time.Second, Max: 10 * time.Second}
	for _, tc := range []struct {
		name     string
		b        Backoff
		failures int
		want     time.Duration
	}{
		{"first", custom, 1, time.Second},
		{"doubles", custom, 2, 2 * time.Second},
		{"doubles again", custom, 4, 8 * time.Second},
		{"capped", custom, 5, 10 * time.Second},
		{"stays capped", custom, 50, 10 * time.Second},
		{"default first", Backoff{}, 1, time.Second},
		{"default doubles", Backoff{}, 2, 2 * time.Second},
		{"default below the cap", Backoff{}, 9, 256 * time.Second},
		{"default cap", Backoff{}, 10, 5 * time.Minute},
		{"default stays capped", Backoff{}, 1000, 5 * time.Minute},
		{"negative takes the defaults", Backoff{Initial: -1, Max: -1}, 10, 5 * time.Minute},
		{"initial above max", Backoff{Initial: time.Minute, Max: 10 * time.Second}, 1, 10 * time.Second},
	} {
		if got := tc.b.delayWith(tc.failures, none); got != tc.want {
			t.Errorf("%s: after %d failures, without jitter: %s, want %s", tc.name, tc.failures, got, tc.want)
		}
		if got, want := tc.b.delayWith(tc.failures, most), tc.want+tc.want/10; got != want {
			t.Errorf("%s: after %d failures, with the most jitter: %s, want %s", tc.name, tc.failures, got, want)
		}
	}
	if DefaultBackoffInitial != time.Second || DefaultBackoffMax != 5*time.Minute {
		t.Errorf("defaults %s and %s, want 1s and 5m", DefaultBackoffInitial, DefaultBackoffMax)
	}
}

// The operator's delays are spread over the whole tenth above the backoff,
// so that CRs failing together do not retry together: 200 draws at the
// default cap all fall in [5m, 5m30s], many distinct, reaching both the
// lowest and the highest tenth of that range (each missed with a chance
// of 0.9^200).
func TestBackoffJitter(t *testing.T) {
	const draws = 200
	low, high := DefaultBackoffMax, DefaultBackoffMax+DefaultBackoffMax/10
	seen := map[time.Duration]bool{}
	lo, hi := high, low
	for range draws {
		d := (Backoff{}).delay(1000)
		if d < low || d > high {
			t.Fatalf("delay %s at the default cap, want within [%s, %s]", d, low, high)
		}
		seen[d] = true
		lo, hi = min(lo, d), max(hi, d)
	}
	spread := high - low
	if len(seen) < draws/2 || lo > low+spread/10 || hi < high-spread/10 {
		t.Errorf("%d draws: %d distinct delays from %s to %s: the jitter does not spread retries over [%s, %s]", draws, len(seen), lo, hi, low, high)
	}
}

// Events in between cannot start the same attempt early; a new attempt (the
// CR or the chart changed) goes at once; success forgets the failures.
func TestRetries(t *testing.T) {
	now := time.Unix(1000, 0)
	policy := Backoff{Initial: time.Second, Max: time.Minute}
	var r failure
	if w := r.wait("x", now); w != 0 {
		t.Fatalf("first attempt waits %s", w)
	}
	var delays []time.Duration
	for range 4 {
		d := r.failed(policy, "x", now, false)
		delays = append(delays, d)
		if w := r.wait("x", now.Add(d/2)); w <= 0 {
			t.Errorf("after failure %d: an event half way through the backoff may retry", len(delays))
		}
		if w := r.wait("x", now.Add(d)); w != 0 {
			t.Errorf("after failure %d: still waiting %s once the backoff is over", len(delays), w)
		}
		now = now.Add(d)
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] <= delays[i-1] {
			t.Errorf("delays %v do not grow", delays)
		}
	}
	if w := r.wait("y", now); w != 0 {
		t.Errorf("a changed CR waits %s", w)
	}
	if d := r.failed(policy, "y", now, false); d > 1100*time.Millisecond {
		t.Errorf("a new attempt's first failure backs off %s, want the initial delay", d)
	}
	// Failures to reach the API server do not grow the backoff.
	for range 10 {
		if d := r.failed(policy, "y", now, true); d > 1100*time.Millisecond {
			t.Fatalf("an unreachable API server backs off %s", d)
		}
	}
	if d := r.failed(policy, "y", now, false); d < 2*time.Second || d > 2200*time.Millisecond {
		t.Errorf("the second real failure backs off %s, want 2s", d)
	}
	r = failure{} // success
	if w := r.wait("y", now); w != 0 {
		t.Errorf("after success: waits %s", w)
	}
}

func TestAttemptKey(t *testing.T) {
	base := attemptKey("d1", map[string]string{"a": "1", "b": "2"})
	for _, tc := range []struct {
		name   string
		key    string
		change bool
	}{
		{"same, other map order", attemptKey("d1", map[string]string{"b": "2", "a": "1"}), false},
		{"other digest", attemptKey("d2", map[string]string{"a": "1", "b": "2"}), true},
		{"annotation changed", attemptKey("d1", map[string]string{"a": "1", "b": "3"}), true},
		{"annotation added", attemptKey("d1", map[string]string{"a": "1", "b": "2", "c": ""}), true},
		{"key and value not confused", attemptKey("d1", map[string]string{"a": "1b", "": "2"}), true},
	} {
		if got := tc.key != base; got != tc.change {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.change)
		}
	}
}

func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused, wrapped twice", fmt.Errorf("upgrade failed: %w", fmt.Errorf("get: %w", refused)), true},
		{"joined with a remediation's error", errors.Join(errors.New("upgrade failed"), refused), true},
		{"service unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"invalid object", apierrors.NewBadRequest("port 70000 out of range"), false},
		{"template error", errors.New("values.mandatory is required"), false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("%s: unreachable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
