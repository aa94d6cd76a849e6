package metricsauth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// Defaults of Options. A scrape every 15 to 30 s then costs a TokenReview
// and a SubjectAccessReview every 2 minutes; a revoked token or role is
// honoured within that time, a newly granted one within 30 s.
const (
	DefaultAllowTTL  = 2 * time.Minute
	DefaultDenyTTL   = 30 * time.Second
	DefaultCacheSize = 256
	// DefaultDenyCacheSize is small: it spares reviews to a few scrapers
	// with a wrong token or role, retrying at each scrape; a flood of
	// made-up tokens it need not remember.
	DefaultDenyCacheSize = 64
	DefaultTimeout       = 10 * time.Second
)

// Defaults of the bound on reviews. A scraper costs two reviews when it
// starts, every AllowTTL after, and when its token is rotated (hourly for a
// projected ServiceAccount token): a Prometheus pair needs about two reviews
// a minute. One a second sustains sixty scrapers with tokens of their own,
// a burst of 20 lets ten start at once (a restarted operator has empty
// caches), and a flood of made-up tokens then costs the API server one
// review a second. Reviews take milliseconds: 8 in flight are reached only
// when the API server is slow, and more would only queue up there.
const (
	DefaultReviewsPerSecond   = 1
	DefaultReviewBurst        = 20
	DefaultMaxReviewsInFlight = 8
)

// Options tune a Filter; zero fields take the defaults.
type Options struct {
	// AllowTTL is how long a token the API server authenticated, and an
	// access it allowed, are trusted without asking again.
	AllowTTL time.Duration
	// DenyTTL is how long a token it did not authenticate, and an access
	// it denied, are refused without asking again. Negative TTLs cache
	// nothing.
	DenyTTL time.Duration
	// CacheSize bounds the entries of each of the two caches of allowed
	// answers (authenticated tokens, and allowed accesses).
	CacheSize int
	// DenyCacheSize bounds the entries of each of the two caches of
	// refusals, kept apart so that refusals never push out an allowed
	// answer.
	DenyCacheSize int
	// Timeout bounds one review.
	Timeout time.Duration

	// ReviewsPerSecond and ReviewBurst bound the rate of the reviews no
	// cache answers (a token bucket); beyond it a request is refused with
	// 429 Too Many Requests and Retry-After, and no review is sent.
	// Requests answered from the caches are never refused. A negative
	// ReviewsPerSecond removes the bound.
	ReviewsPerSecond float64
	ReviewBurst      int
	// MaxReviewsInFlight caps the reviews waiting for the API server's
	// answer; beyond it, 429 as well. Negative: no cap.
	MaxReviewsInFlight int

	// now is the clock of the caches; time.Now when nil (tests set it).
	now func() time.Time
}

func (o Options) withDefaults() Options {
	o.AllowTTL = cmp.Or(o.AllowTTL, DefaultAllowTTL)
	o.DenyTTL = cmp.Or(o.DenyTTL, DefaultDenyTTL)
	o.CacheSize = cmp.Or(o.CacheSize, DefaultCacheSize)
	o.DenyCacheSize = cmp.Or(o.DenyCacheSize, DefaultDenyCacheSize)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.ReviewsPerSecond = cmp.Or(o.ReviewsPerSecond, DefaultReviewsPerSecond)
	o.ReviewBurst = cmp.Or(o.ReviewBurst, DefaultReviewBurst)
	o.MaxReviewsInFlight = cmp.Or(o.MaxReviewsInFlight, DefaultMaxReviewsInFlight)
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Filter lets through only requests whose bearer token the API server
// authenticates (a TokenReview) and whose user it allows the request's
// verb on its path as a non-resource URL (a SubjectAccessReview), as the
// metrics-reader ClusterRole does. Both answers are cached, refusals apart
// from allowances; concurrent requests asking the same question share one
// review; and the reviews no cache answers are bounded (Options). It needs
// AuthRules. It stands in for controller-runtime's
// filters.WithAuthenticationAndAuthorization, which brings k8s.io/apiserver's
// whole authentication and authorization stacks (CEL, OpenTelemetry, gRPC)
// into the binary for two API calls.
type Filter struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface
	opts   Options
	// users holds reviewed tokens by their SHA-256.
	users *verdicts[tokenReview]
	// decisions holds reviewed accesses by the SHA-256 of their review.
	decisions *verdicts[bool]
	// tokenReviews and accessReviews are the reviews in flight, by the
	// same keys.
	tokenReviews  flight[tokenReview]
	accessReviews flight[bool]
	// bound limits the reviews sent.
	bound *bound
}

// tokenReview is the API server's answer on a token: its user when
// authenticated.
type tokenReview struct {
	user          authenticationv1.UserInfo
	authenticated bool
}

// New returns a Filter asking the API server of cfg through httpClient
// (nil: one of cfg's own).
func New(cfg *rest.Config, httpClient *http.Client, o Options) (*Filter, error) {
	if httpClient == nil {
		var err error
		if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
			return nil, fmt.Errorf("metrics authentication: %w", err)
		}
	}
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return newFilter(authn.TokenReviews(), authz.SubjectAccessReviews(), o), nil
}

// newFilter returns a Filter sending its reviews through tokens and access
// (tests pass fakes).
func newFilter(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface, o Options) *Filter {
	o = o.withDefaults()
	return &Filter{
		tokens:    tokens,
		access:    access,
		opts:      o,
		users:     newVerdicts[tokenReview](o),
		decisions: newVerdicts[bool](o),
		bound:     newBound(o),
	}
}

// Wrap returns next behind the filter; its signature is controller-runtime's
// metricsserver.Filter. Refusals are 401 (no token, or one the API server
// does not authenticate), 403 (not allowed), 429 (a review was needed
// beyond the bound) and 500 (a review failed; the cause is logged, not
// answered). Tokens are never logged.
func (f *Filter) Wrap(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), f.opts.Timeout)
		defer cancel()
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			unauthorized(w)
			return
		}
		review, err := f.authenticate(ctx, token)
		if err != nil {
			reviewFailed(log, w, err, "reviewing the token of a metrics request")
			return
		}
		if !review.authenticated {
			log.V(4).Info("metrics request with a token the API server does not authenticate")
			unauthorized(w)
			return
		}
		allowed, err := f.authorize(ctx, accessSpec(review.user, r.URL.Path, strings.ToLower(r.Method)))
		if err != nil {
			reviewFailed(log, w, err, "reviewing the access of a metrics request", "user", review.user.Username)
			return
		}
		if !allowed {
			log.V(4).Info("metrics request denied", "user", review.user.Username, "path", r.URL.Path)
			http.Error(w, http.StatusText(http.StatusForbidden), http.StatusForbidden)
			return
		}
		// The handler has no use for the token.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	}), nil
}

// bearerToken is the token of an "Authorization: Bearer TOKEN" header
// (the scheme case-insensitive, RFC 6750).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
	http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
}

// reviewFailed answers a request whose review did not come back: 429 when
// the bound kept it from being sent, else 500. A refusal by the bound is
// logged only at V(4): a flood must not flood the log too.
func reviewFailed(log logr.Logger, w http.ResponseWriter, err error, msg string, keysAndValues ...any) {
	var tooMany *tooManyReviewsError
	if errors.As(err, &tooMany) {
		log.V(4).Info(msg+": "+err.Error(), keysAndValues...)
		w.Header().Set("Retry-After", tooMany.retryAfterHeader())
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	log.Error(err, msg, keysAndValues...)
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

// authenticate reviews token, from the cache when it can, else sharing
// the review in flight for the same token, else within the bound. A token
// the API server rejects (malformed, expired, unknown) is a review that did
// not authenticate, not an error; only a failed request is.
func (f *Filter) authenticate(ctx context.Context, token string) (tokenReview, error) {
	k := sha256.Sum256([]byte(token))
	if r, ok := f.users.get(k); ok {
		return r, nil
	}
	return f.tokenReviews.do(ctx, k, func() (tokenReview, error) {
		// A review that ended between the lookup above and now was not
		// in flight to be joined, but is in the cache.
		if r, ok := f.users.get(k); ok {
			return r, nil
		}
		return f.reviewToken(ctx, k, token)
	})
}

func (f *Filter) reviewToken(ctx context.Context, k key, token string) (tokenReview, error) {
	ctx, cancel, err := f.startReview(ctx)
	if err != nil {
		return tokenReview{}, err
	}
	defer cancel()
	tr, err := f.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return tokenReview{}, fmt.Errorf("creating a TokenReview: %w", err)
	}
	r := tokenReview{user: tr.Status.User, authenticated: tr.Status.Authenticated}
	f.users.put(k, r, r.authenticated)
	return r, nil
}

// authorize reviews access as authenticate reviews a token.
func (f *Filter) authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	k, err := accessKey(spec)
	if err != nil {
		return false, err
	}
	if allowed, ok := f.decisions.get(k); ok {
		return allowed, nil
	}
	return f.accessReviews.do(ctx, k, func() (bool, error) {
		if allowed, ok := f.decisions.get(k); ok {
			return allowed, nil
		}
		return f.reviewAccess(ctx, k, spec)
	})
}

func (f *Filter) reviewAccess(ctx context.Context, k key, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	ctx, cancel, err := f.startReview(ctx)
	if err != nil {
		return false, err
	}
	defer cancel()
	sar, err := f.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	f.decisions.put(k, allowed, allowed)
	return allowed, nil
}

// startReview takes a review's share of the bound and returns the context
// to send it in, whose cancel gives the share back. The review answers
// every request that shares it: it is not canceled with the request that
// happened to start it, only bounded by Timeout.
func (f *Filter) startReview(ctx context.Context) (context.Context, context.CancelFunc, error) {
	release, err := f.bound.acquire()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.Timeout)
	return ctx, func() { cancel(); release() }, nil
}

// accessKey keys the decision on spec: the whole question (user, groups,
// UID, extra, path, verb), whose JSON is canonical (sorted map keys).
func accessKey(spec authorizationv1.SubjectAccessReviewSpec) (key, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return key{}, fmt.Errorf("keying a SubjectAccessReview: %w", err)
	}
	return sha256.Sum256(b), nil
}

// accessSpec asks whether user may verb the non-resource URL path.
func accessSpec(user authenticationv1.UserInfo, path, verb string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
}
