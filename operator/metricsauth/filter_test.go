package metricsauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// reviewCounter counts the TokenReviews and SubjectAccessReviews sent
// through it.
type reviewCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int // by resource
}

func (c *reviewCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, r := range []string{"tokenreviews", "subjectaccessreviews"} {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/"+r) {
			c.mu.Lock()
			c.n[r]++
			c.mu.Unlock()
		}
	}
	return c.next.RoundTrip(req)
}

// take returns the counts since the last take.
func (c *reviewCounter) take() (tokenReviews, accessReviews int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tokenReviews, accessReviews = c.n["tokenreviews"], c.n["subjectaccessreviews"]
	c.n = map[string]int{}
	return tokenReviews, accessReviews
}

// countingConfig is a copy of cfg whose reviews c counts.
func countingConfig(cfg *rest.Config, c *reviewCounter) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c })
	return cfg
}

// The filter on a real API server, scrape after scrape with a settable
// clock: who gets through, and how many reviews each scrape costs. Within
// the TTLs a scrape costs none; a denial expires before an allowance.
func TestFilter(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	cs := kubernetes.NewForConfigOrDie(cfg)
	reader, stranger := saToken(t, cs, "prometheus"), saToken(t, cs, "stranger")
	bindReader(t, cs, "prometheus")

	counter := &reviewCounter{n: map[string]int{}}
	clk := newClock()
	f, err := New(countingConfig(cfg, counter), nil, Options{now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logSink{}
	srv := serve(t, f, logs.logger())

	steps := []struct {
		name           string
		advance        time.Duration
		method, path   string
		header         string
		want           int
		tokens, access int // reviews sent
	}{
		{name: "no token", want: 401},
		{name: "basic auth", header: "Basic cHJvbTpwYXNz", want: 401},
		{name: "malformed token", header: "Bearer not-a-token", want: 401, tokens: 1},
		{name: "malformed token, cached", header: "Bearer not-a-token", want: 401},
		{name: "no metrics-reader", header: "Bearer " + stranger, want: 403, tokens: 1, access: 1},
		{name: "no metrics-reader, cached", header: "Bearer " + stranger, want: 403},
		{name: "metrics-reader", header: "Bearer " + reader, want: 200, tokens: 1, access: 1},
		{name: "metrics-reader, cached", advance: 15 * time.Second, header: "Bearer " + reader, want: 200},
		{name: "metrics-reader, another path", header: "Bearer " + reader, path: "/debug/pprof/", want: 403, access: 1},
		{name: "metrics-reader, another verb", header: "Bearer " + reader, method: http.MethodPost, want: 403, access: 1},
		// The token's user is still trusted; its denial is asked again.
		{name: "no metrics-reader after the deny TTL", advance: DefaultDenyTTL, header: "Bearer " + stranger, want: 403, access: 1},
		{name: "malformed token after the deny TTL", header: "Bearer not-a-token", want: 401, tokens: 1},
		{name: "metrics-reader within the allow TTL", header: "Bearer " + reader, want: 200},
		{name: "metrics-reader after the allow TTL", advance: DefaultAllowTTL, header: "Bearer " + reader, want: 200, tokens: 1, access: 1},
	}
	for _, s := range steps {
		clk.advance(s.advance)
		method, path := s.method, s.path
		if method == "" {
			method = http.MethodGet
		}
		if path == "" {
			path = Path
		}
		code, body, hdr := request(t, method, srv.URL+path, s.header)
		if code != s.want {
			t.Errorf("%s: %d, want %d: %s", s.name, code, s.want, body)
		}
		if (code == 200) != (body == "metrics") {
			t.Errorf("%s: %d with body %q", s.name, code, body)
		}
		if code == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without a WWW-Authenticate challenge", s.name)
		}
		if tokens, access := counter.take(); tokens != s.tokens || access != s.access {
			t.Errorf("%s: %d TokenReviews and %d SubjectAccessReviews, want %d and %d", s.name, tokens, access, s.tokens, s.access)
		}
	}
	logs.assertNoSecret(t, reader, stranger, "not-a-token")
}

// A review the API server refuses (the operator lacks AuthRules) is a 500
// that tells the scraper nothing of why, is logged, and is not cached.
func TestFilterReviewFails(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	cs := kubernetes.NewForConfigOrDie(cfg)
	reader := saToken(t, cs, "prometheus")
	bindReader(t, cs, "prometheus")

	tests := []struct {
		name string
		// rules are the operator's; the review it lacks fails.
		rules []rbacv1.PolicyRule
		stage string
	}{
		{name: "no TokenReviews", stage: "TokenReview"},
		{name: "no SubjectAccessReviews", rules: AuthRules()[:1], stage: "SubjectAccessReview"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := "operator-" + strings.ReplaceAll(strings.ToLower(tt.stage), " ", "")
			grant(t, cs, user, tt.rules)
			opCfg := rest.CopyConfig(cfg)
			opCfg.Impersonate = rest.ImpersonationConfig{UserName: user}
			counter := &reviewCounter{n: map[string]int{}}
			f, err := New(countingConfig(opCfg, counter), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			logs := &logSink{}
			srv := serve(t, f, logs.logger())
			for i := range 2 {
				code, body, _ := request(t, http.MethodGet, srv.URL+Path, "Bearer "+reader)
				if code != 500 || body != "Internal Server Error" {
					t.Errorf("scrape %d: %d %q, want 500 saying no more", i, code, body)
				}
				if tokens, access := counter.take(); tokens+access == 0 {
					t.Errorf("scrape %d sent no review: a failure was cached", i)
				}
			}
			if !strings.Contains(logs.String(), tt.stage) || !strings.Contains(logs.String(), "forbidden") {
				t.Errorf("the log does not say which review failed and why:\n%s", logs)
			}
			logs.assertNoSecret(t, reader)
		})
	}
}

// serve serves "metrics" behind f, failing if the handler sees a token.
func serve(t *testing.T, f *Filter, log logr.Logger) *httptest.Server {
	t.Helper()
	h, err := f.Wrap(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Error("the handler behind the filter got the Authorization header")
		}
		_, _ = io.WriteString(w, "metrics")
	}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func request(t *testing.T, method, url, authorization string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header
}

// saToken creates a ServiceAccount in default and returns a token of it.
func saToken(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bindReader binds ReaderRules to the ServiceAccount default/sa.
func bindReader(t *testing.T, cs kubernetes.Interface, sa string) {
	t.Helper()
	bind(t, cs, ReaderRole, ReaderRules(), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "default"})
}

// grant binds rules (none: an empty role) to the user.
func grant(t *testing.T, cs kubernetes.Interface, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	bind(t, cs, user, rules, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
}

func bind(t *testing.T, cs kubernetes.Interface, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{subject}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// logSink keeps every line the filter logs, at every verbosity.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logSink) assertNoSecret(t *testing.T, secrets ...string) {
	t.Helper()
	logs := l.String()
	if logs == "" {
		t.Error("the filter logged nothing: the check below proves nothing")
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("a token is in the log:\n%s", logs)
		}
	}
}
