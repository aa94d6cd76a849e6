package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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
	DefaultTimeout   = 10 * time.Second
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
	// CacheSize bounds the entries of each of the two caches (tokens, and
	// accesses).
	CacheSize int
	// Timeout bounds one review.
	Timeout time.Duration

	// now is the clock of the caches; time.Now when nil (tests set it).
	now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.AllowTTL == 0 {
		o.AllowTTL = DefaultAllowTTL
	}
	if o.DenyTTL == 0 {
		o.DenyTTL = DefaultDenyTTL
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Filter lets through only requests whose bearer token the API server
// authenticates (a TokenReview) and whose user it allows the request's
// verb on its path as a non-resource URL (a SubjectAccessReview), as the
// metrics-reader ClusterRole does. Both answers are cached. It needs
// AuthRules. It stands in for controller-runtime's
// filters.WithAuthenticationAndAuthorization, which brings k8s.io/apiserver's
// whole authentication and authorization stacks (CEL, OpenTelemetry, gRPC)
// into the binary for two API calls.
type Filter struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface
	opts   Options
	// users holds reviewed tokens by their SHA-256.
	users *ttlCache[tokenReview]
	// decisions holds reviewed accesses by the SHA-256 of their review.
	decisions *ttlCache[bool]
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
	o = o.withDefaults()
	return &Filter{
		tokens:    authn.TokenReviews(),
		access:    authz.SubjectAccessReviews(),
		opts:      o,
		users:     newTTLCache[tokenReview](o.CacheSize, o.now),
		decisions: newTTLCache[bool](o.CacheSize, o.now),
	}, nil
}

// Wrap returns next behind the filter; its signature is controller-runtime's
// metricsserver.Filter. Refusals are 401 (no token, or one the API server
// does not authenticate), 403 (not allowed) and 500 (a review failed; the
// cause is logged, not answered). Tokens are never logged.
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
			log.Error(err, "reviewing the token of a metrics request")
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		if !review.authenticated {
			log.V(4).Info("metrics request with a token the API server does not authenticate")
			unauthorized(w)
			return
		}
		allowed, err := f.authorize(ctx, accessSpec(review.user, r.URL.Path, strings.ToLower(r.Method)))
		if err != nil {
			log.Error(err, "reviewing the access of a metrics request", "user", review.user.Username)
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
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

// authenticate reviews token, from the cache when it can. A token the API
// server rejects (malformed, expired, unknown) is a review that did not
// authenticate, not an error; only a failed request is.
func (f *Filter) authenticate(ctx context.Context, token string) (tokenReview, error) {
	k := sha256.Sum256([]byte(token))
	if r, ok := f.users.get(k); ok {
		return r, nil
	}
	tr, err := f.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return tokenReview{}, fmt.Errorf("creating a TokenReview: %w", err)
	}
	r := tokenReview{user: tr.Status.User, authenticated: tr.Status.Authenticated}
	f.users.put(k, r, f.ttl(r.authenticated))
	return r, nil
}

// authorize reviews access, from the cache when it can.
func (f *Filter) authorize(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	k, err := accessKey(spec)
	if err != nil {
		return false, err
	}
	if allowed, ok := f.decisions.get(k); ok {
		return allowed, nil
	}
	sar, err := f.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	allowed := sar.Status.Allowed && !sar.Status.Denied
	f.decisions.put(k, allowed, f.ttl(allowed))
	return allowed, nil
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

func (f *Filter) ttl(allowed bool) time.Duration {
	if allowed {
		return f.opts.AllowTTL
	}
	return f.opts.DenyTTL
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
