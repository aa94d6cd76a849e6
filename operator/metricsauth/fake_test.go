package metricsauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAPI answers reviews as an API server would that knows a few tokens
// and which of their users may scrape, and counts the reviews it gets.
// It stands in for the API server where a test needs to hold a review in
// flight or send hundreds of them; TestFilter checks the filter against a
// real one.
type fakeAPI struct {
	// users are the user names of the tokens it authenticates.
	users map[string]string
	// readers are the users allowed to get Path.
	readers map[string]bool
	// hold, when set, runs in each review before it answers, with the
	// review's kind and its token or user.
	hold func(kind, subject string)

	mu                          sync.Mutex
	tokenReviews, accessReviews int
}

const (
	readerToken   = "reader-token"
	strangerToken = "stranger-token"
)

// newFakeAPI knows a reader (a user who may scrape) and a stranger (a user
// who may not).
func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		users:   map[string]string{readerToken: "reader", strangerToken: "stranger"},
		readers: map[string]bool{"reader": true},
	}
}

// take returns the reviews counted since the last take.
func (a *fakeAPI) take() (tokenReviews, accessReviews int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tokenReviews, accessReviews = a.tokenReviews, a.accessReviews
	a.tokenReviews, a.accessReviews = 0, 0
	return tokenReviews, accessReviews
}

func (a *fakeAPI) count(n *int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	*n++
}

type fakeTokenReviews struct{ *fakeAPI }

// Create fails, as a real client does, when ctx is done by the time it
// would answer.
func (a fakeTokenReviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	a.count(&a.tokenReviews)
	if a.hold != nil {
		a.hold("TokenReview", tr.Spec.Token)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := tr.DeepCopy()
	if name, ok := a.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: name}}
	}
	return out, nil
}

type fakeAccessReviews struct{ *fakeAPI }

func (a fakeAccessReviews) Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	a.count(&a.accessReviews)
	if a.hold != nil {
		a.hold("SubjectAccessReview", sar.Spec.User)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := sar.DeepCopy()
	na := sar.Spec.NonResourceAttributes
	out.Status.Allowed = a.readers[sar.Spec.User] && na != nil && na.Path == Path && na.Verb == "get"
	return out, nil
}

// fakeFilter is a Filter asking a, and the handler it guards, which
// answers "metrics".
func fakeFilter(t testing.TB, a *fakeAPI, o Options) (*Filter, http.Handler) {
	t.Helper()
	f := newFilter(fakeTokenReviews{a}, fakeAccessReviews{a}, o)
	h, err := f.Wrap(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("metrics"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	return f, h
}

// scrape sends h a request for Path with method and, unless empty, the
// header "Authorization: Bearer token".
func scrape(h http.Handler, method, token string) *httptest.ResponseRecorder {
	return scrapeIn(context.Background(), h, method, token)
}

// scrapeIn is scrape with the request's context.
func scrapeIn(ctx context.Context, h http.Handler, method, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, method, Path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// unbounded are Options without a bound on reviews, for tests of
// something else.
func unbounded(o Options) Options {
	o.ReviewsPerSecond, o.MaxReviewsInFlight = -1, -1
	return o
}
