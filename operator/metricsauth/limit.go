package metricsauth

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// tooManyReviewsError is a review the bound did not let the filter send:
// the request is refused with 429, and no review goes to the API server.
type tooManyReviewsError struct {
	retryAfter time.Duration
	reason     string
}

func (e *tooManyReviewsError) Error() string {
	return fmt.Sprintf("too many reviews (%s): retry after %s", e.reason, e.retryAfter)
}

// retryAfterHeader is the value of the Retry-After header: whole seconds,
// at least one.
func (e *tooManyReviewsError) retryAfterHeader() string {
	return strconv.FormatInt(int64(max(1, math.Ceil(e.retryAfter.Seconds()))), 10)
}

// bound limits the reviews the filter sends, those no cache answers: a
// token bucket for their rate, and a cap on those in flight, which the
// rate alone does not bound when the API server is slow to answer.
type bound struct {
	rate     *rate.Limiter // nil: no limit on the rate
	inFlight chan struct{} // a slot per review in flight; nil: no cap
	now      func() time.Time
}

func newBound(o Options) *bound {
	b := &bound{now: o.now}
	if o.ReviewsPerSecond > 0 {
		b.rate = rate.NewLimiter(rate.Limit(o.ReviewsPerSecond), o.ReviewBurst)
	}
	if o.MaxReviewsInFlight > 0 {
		b.inFlight = make(chan struct{}, o.MaxReviewsInFlight)
	}
	return b
}

// acquire takes a review's share of the bound, or returns a
// *tooManyReviewsError. It never waits: a request beyond the bound is
// refused at once rather than held, so that a flood holds no goroutines.
// release gives back the slot in flight when the review is done.
func (b *bound) acquire() (release func(), err error) {
	release = func() {}
	if b.inFlight != nil {
		select {
		case b.inFlight <- struct{}{}:
			release = func() { <-b.inFlight }
		default:
			// Reviews take milliseconds when the API server is well: a
			// second lets those in flight finish.
			return nil, &tooManyReviewsError{retryAfter: time.Second, reason: "in flight"}
		}
	}
	if b.rate != nil {
		now := b.now()
		r := b.rate.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			release()
			return nil, &tooManyReviewsError{retryAfter: d, reason: "rate"}
		}
	}
	return release, nil
}
