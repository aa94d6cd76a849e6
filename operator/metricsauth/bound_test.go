package metricsauth

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Refusals, which anyone can cause at will, never push an allowed answer
// out of a cache: after a flood of them, with caches of two entries, the
// reader's scrape is still answered without a review.
func TestRefusalsDoNotEvict(t *testing.T) {
	tests := []struct {
		name string
		// flood is the i-th request of the flood: its token and method.
		flood func(i int) (token, method string)
		want  int
	}{
		{
			name:  "made-up tokens",
			flood: func(i int) (string, string) { return fmt.Sprint("made-up-", i), http.MethodGet },
			want:  http.StatusUnauthorized,
		},
		{
			name:  "a user without the role, with made-up methods",
			flood: func(i int) (string, string) { return strangerToken, fmt.Sprint("METHOD", i) },
			want:  http.StatusForbidden,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI()
			_, h := fakeFilter(t, api, unbounded(Options{CacheSize: 2, DenyCacheSize: 2}))
			if w := scrape(h, http.MethodGet, readerToken); w.Code != http.StatusOK {
				t.Fatalf("the reader's first scrape: %d", w.Code)
			}
			api.take()
			for i := range 100 {
				token, method := tt.flood(i)
				if w := scrape(h, method, token); w.Code != tt.want {
					t.Fatalf("flood request %d: %d, want %d", i, w.Code, tt.want)
				}
			}
			if tokens, access := api.take(); tokens+access == 0 {
				t.Fatal("the flood sent no review: it tested nothing")
			}
			if w := scrape(h, http.MethodGet, readerToken); w.Code != http.StatusOK {
				t.Errorf("the reader after the flood: %d", w.Code)
			}
			if tokens, access := api.take(); tokens+access != 0 {
				t.Errorf("the reader after the flood cost %d TokenReviews and %d SubjectAccessReviews, want none: its answers were pushed out", tokens, access)
			}
		})
	}
}

// gate opens when n callers have arrived.
type gate struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func newGate(n int) *gate { return &gate{n: n, open: make(chan struct{})} }

func (g *gate) arrive() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.arrived++
	if g.arrived == g.n {
		close(g.open)
	}
}

// wait returns false if the gate has not opened within patience: the test
// then fails instead of hanging.
func (g *gate) wait() bool {
	select {
	case <-g.open:
		return true
	case <-time.After(patience):
		return false
	}
}

// patience is how long a test waits for what takes microseconds when the
// behaviour it tests is there.
const patience = 10 * time.Second

// await fails t if ch is not closed within patience.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("waited %s for %s", patience, what)
	}
}

// K concurrent requests asking the same unseen question cost one review.
// The review is held until all K are in, either waiting on the review in
// flight or (without sharing) sending their own, so the count does not
// depend on timing.
func TestConcurrentRequestsShareAReview(t *testing.T) {
	const k = 20
	tests := []struct {
		name string
		// kind is the review held and counted.
		kind string
		// warm, when set, is a request made first: it caches the token
		// but not the access the K requests ask about.
		warm string
	}{
		{name: "an unseen token", kind: "TokenReview"},
		{name: "a known token, an unseen access", kind: "SubjectAccessReview", warm: http.MethodHead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI()
			f, h := fakeFilter(t, api, unbounded(Options{}))
			if tt.warm != "" {
				scrape(h, tt.warm, readerToken)
			}
			api.take()

			g := newGate(k)
			if tt.kind == "TokenReview" {
				f.tokenReviews.joined = g.arrive
			} else {
				f.accessReviews.joined = g.arrive
			}
			var timedOut sync.Once
			api.hold = func(kind, _ string) {
				if kind != tt.kind {
					return
				}
				g.arrive()
				if !g.wait() {
					timedOut.Do(func() { t.Errorf("not all %d requests arrived", k) })
				}
			}

			codes := make([]int, k)
			var wg sync.WaitGroup
			for i := range k {
				wg.Go(func() { codes[i] = scrape(h, http.MethodGet, readerToken).Code })
			}
			wg.Wait()
			for i, code := range codes {
				if code != http.StatusOK {
					t.Errorf("request %d: %d", i, code)
				}
			}
			tokens, access := api.take()
			if n := map[string]int{"TokenReview": tokens, "SubjectAccessReview": access}[tt.kind]; n != 1 {
				t.Errorf("%d concurrent requests sent %d %ss, want 1", k, n, tt.kind)
			}
		})
	}
}

// Past the bound on reviews a request that needs one is refused with 429
// and a Retry-After, and no review is sent; requests the caches answer are
// served as before. The bucket holds 3 reviews and earns one every 2 s.
func TestBoundRate(t *testing.T) {
	clk := newClock()
	api := newFakeAPI()
	_, h := fakeFilter(t, api, Options{ReviewsPerSecond: 0.5, ReviewBurst: 3, MaxReviewsInFlight: -1, now: clk.now})

	steps := []struct {
		name           string
		advance        time.Duration
		method         string
		token          string
		want           int
		retryAfter     string
		tokens, access int // reviews sent
	}{
		{name: "reader", token: readerToken, want: 200, tokens: 1, access: 1},
		{name: "made-up token, the last review of the bucket", token: "made-up-1", want: 401, tokens: 1},
		{name: "another made-up token", token: "made-up-2", want: 429, retryAfter: "2"},
		{name: "reader, cached", token: readerToken, want: 200},
		{name: "the first made-up token, cached", token: "made-up-1", want: 401},
		{name: "no token", want: 401},
		{name: "made-up token, a review earned", advance: 2 * time.Second, token: "made-up-2", want: 401, tokens: 1},
		{name: "stranger's token", token: strangerToken, want: 429, retryAfter: "2"},
		{name: "stranger's token, half a review earned", advance: time.Second, token: strangerToken, want: 429, retryAfter: "1"},
		{name: "stranger's token and access, two reviews earned", advance: 3 * time.Second, token: strangerToken, want: 403, tokens: 1, access: 1},
		// The stranger's token is cached; the access review is refused.
		{name: "stranger, another method", method: http.MethodPost, token: strangerToken, want: 429, retryAfter: "2"},
		{name: "reader, still cached", token: readerToken, want: 200},
	}
	for _, s := range steps {
		clk.advance(s.advance)
		method := s.method
		if method == "" {
			method = http.MethodGet
		}
		w := scrape(h, method, s.token)
		if w.Code != s.want {
			t.Errorf("%s: %d, want %d", s.name, w.Code, s.want)
		}
		if got := w.Header().Get("Retry-After"); got != s.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", s.name, got, s.retryAfter)
		}
		if tokens, access := api.take(); tokens != s.tokens || access != s.access {
			t.Errorf("%s: %d TokenReviews and %d SubjectAccessReviews, want %d and %d", s.name, tokens, access, s.tokens, s.access)
		}
	}
}

// Past the cap on reviews in flight, a request that needs another review
// is refused with 429 at once; one with the token in flight shares its
// review, and one the caches answer is served.
func TestBoundInFlight(t *testing.T) {
	api := newFakeAPI()
	f, h := fakeFilter(t, api, Options{ReviewsPerSecond: -1, MaxReviewsInFlight: 1})
	if w := scrape(h, http.MethodGet, readerToken); w.Code != http.StatusOK {
		t.Fatalf("the reader's first scrape: %d", w.Code)
	}
	api.take()

	// The review of made-up-1 is held until it is freed.
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	api.hold = func(_, subject string) {
		if subject == "made-up-1" {
			close(started)
			<-release
		}
	}
	joined := make(chan struct{})
	f.tokenReviews.joined = func() { close(joined) }

	held := make([]int, 2)
	var wg sync.WaitGroup
	wg.Go(func() { held[0] = scrape(h, http.MethodGet, "made-up-1").Code })
	await(t, started, "the review to start")
	wg.Go(func() { held[1] = scrape(h, http.MethodGet, "made-up-1").Code })
	await(t, joined, "a request with the same token to join the review")

	if w := scrape(h, http.MethodGet, "made-up-2"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("another token with the cap reached: %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	if w := scrape(h, http.MethodGet, readerToken); w.Code != http.StatusOK {
		t.Errorf("the cached reader with the cap reached: %d", w.Code)
	}
	free()
	wg.Wait()
	if held[0] != http.StatusUnauthorized || held[1] != http.StatusUnauthorized {
		t.Errorf("the requests sharing the held review: %v, want 401s", held)
	}
	if tokens, access := api.take(); tokens != 1 || access != 0 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews, want the held one only", tokens, access)
	}
	// The slot is given back.
	if w := scrape(h, http.MethodGet, "made-up-2"); w.Code != http.StatusUnauthorized {
		t.Errorf("after the held review: %d, want 401", w.Code)
	}
}

// A shared review answers every request that waits on it: the request
// that started it going away (its scraper hung up) does not cancel it.
func TestSharedReviewOutlivesItsStarter(t *testing.T) {
	api := newFakeAPI()
	f, h := fakeFilter(t, api, unbounded(Options{}))
	started, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free)
	api.hold = func(string, string) {
		close(started)
		<-release
	}
	joined := make(chan struct{})
	f.tokenReviews.joined = func() { close(joined) }

	ctx, hangUp := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { scrapeIn(ctx, h, http.MethodGet, "made-up-1") })
	await(t, started, "the review to start")
	var code int
	wg.Go(func() { code = scrape(h, http.MethodGet, "made-up-1").Code })
	await(t, joined, "a request with the same token to join the review")
	hangUp()
	free()
	wg.Wait()
	if code != http.StatusUnauthorized {
		t.Errorf("the request that joined: %d, want 401", code)
	}
}
