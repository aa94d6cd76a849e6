package operator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/metricsauth"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// The secure metrics endpoint, as `chartpilot run` serves it by default,
// on a real API server: no token is 401, a token the API server does not
// know is 401, a ServiceAccount without the metrics-reader rules is 403,
// one bound to them is 200 and gets the metrics; plain HTTP gets nothing.
// A scrape costs a TokenReview and a SubjectAccessReview the first time
// and none again within the cache's TTLs. Both certificates: self-signed,
// and one from a mounted directory (what cert-manager's Secret gives),
// which the endpoint serves.
func TestSecureMetrics(t *testing.T) {
	clustertest.SkipIfShort(t)
	e := newEnv(t)
	ns := e.namespace()
	reader, stranger := e.serviceAccountToken(ns, "prometheus"), e.serviceAccountToken(ns, "stranger")
	e.bindMetricsReader(ns, "prometheus")

	certDir, ca := writeServingCert(t)
	tests := []struct {
		name    string
		serving MetricsServing
		// roots verifies the served certificate; nil skips verifying
		// (a self-signed one, as Prometheus's insecureSkipVerify does).
		roots *x509.CertPool
	}{
		{name: "self-signed", serving: MetricsServing{Secure: true}},
		{name: "mounted certificate", serving: MetricsServing{Secure: true, CertDir: certDir}, roots: ca},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := freeAddress(t)
			reviews := &reviewCounter{}
			startOperator(t, func(o *Options, _ *watches.Watch) {
				o.MetricsBindAddress, o.Metrics = addr, tt.serving
				o.Config = reviews.config(o.Config)
			})
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: tt.roots, InsecureSkipVerify: tt.roots == nil, ServerName: "localhost"}}}
			waitListening(t, addr)
			for _, round := range []struct {
				name string
				// cached: every answer comes from the cache.
				cached bool
			}{{name: "first"}, {name: "again within the TTLs", cached: true}} {
				for _, c := range []struct {
					who, token string
					want       int
					// tokens and access are the reviews a first scrape costs.
					tokens, access int
				}{
					{who: "no token", want: http.StatusUnauthorized},
					{who: "a token the API server never issued", token: "not-a-token", want: http.StatusUnauthorized, tokens: 1},
					{who: "a ServiceAccount without metrics-reader", token: stranger, want: http.StatusForbidden, tokens: 1, access: 1},
					{who: "a ServiceAccount bound to metrics-reader", token: reader, want: http.StatusOK, tokens: 1, access: 1},
				} {
					reviews.take()
					code, body := scrapeAs(t, client, "https://"+addr+metricsauth.Path, c.token)
					if code != c.want {
						t.Errorf("%s, %s: %d, want %d: %s", round.name, c.who, code, c.want, firstLine(body))
					}
					if c.want == http.StatusOK && !strings.Contains(body, "controller_runtime_") {
						t.Errorf("%s: the scrape lacks controller-runtime's metrics:\n%s", c.who, firstLine(body))
					}
					if c.want != http.StatusOK && strings.Contains(body, "controller_runtime_") {
						t.Errorf("%s: got the metrics with status %d", c.who, code)
					}
					wantTokens, wantAccess := c.tokens, c.access
					if round.cached {
						wantTokens, wantAccess = 0, 0
					}
					if tokens, access := reviews.take(); tokens != wantTokens || access != wantAccess {
						t.Errorf("%s, %s: %d TokenReviews and %d SubjectAccessReviews, want %d and %d", round.name, c.who, tokens, access, wantTokens, wantAccess)
					}
				}
			}
			// No plaintext: an HTTP request to the TLS port gets no metrics.
			if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + metricsauth.Path); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "controller_runtime_") {
					t.Errorf("plain HTTP got %d with the metrics", resp.StatusCode)
				}
			}
		})
	}
}

// reviewCounter counts the TokenReviews and SubjectAccessReviews sent
// through the configs it makes.
type reviewCounter struct {
	mu             sync.Mutex
	tokens, access int
}

// config is a copy of cfg whose reviews c counts.
func (c *reviewCounter) config(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			c.mu.Lock()
			switch {
			case req.Method != http.MethodPost:
			case strings.HasSuffix(req.URL.Path, "/tokenreviews"):
				c.tokens++
			case strings.HasSuffix(req.URL.Path, "/subjectaccessreviews"):
				c.access++
			}
			c.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// take returns the counts since the last take.
func (c *reviewCounter) take() (tokens, access int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tokens, access, c.tokens, c.access = c.tokens, c.access, 0, 0
	return tokens, access
}

// A certificate directory without the files asked for is an error naming
// them, not a silent self-signed certificate.
func TestMetricsCertMissing(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		serving MetricsServing
		// err is a part of the error; "" for none.
		err string
	}{
		{name: "no directory", serving: MetricsServing{Secure: true}},
		{name: "insecure ignores the directory", serving: MetricsServing{CertDir: dir}},
		{name: "missing certificate", serving: MetricsServing{Secure: true, CertDir: dir}, err: "tls.crt not found"},
		{name: "missing named key", serving: MetricsServing{Secure: true, CertDir: dir, CertName: "c.pem", KeyName: "k.pem"}, err: "c.pem not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.serving.serverOptions("127.0.0.1:0")
			if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("%v, want %q", err, tt.err)
			}
			if err == nil && o.SecureServing != tt.serving.Secure {
				t.Errorf("SecureServing %t, want %t", o.SecureServing, tt.serving.Secure)
			}
			if err == nil && tt.serving.Secure && o.FilterProvider == nil {
				t.Error("secure serving without the authentication and authorization filter")
			}
		})
	}
}

// serviceAccountToken creates a ServiceAccount and returns a token of it.
func (e *env) serviceAccountToken(ns, name string) string {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	tr, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return tr.Status.Token
}

// bindMetricsReader binds a ClusterRole of metricsauth.ReaderRules, as
// config/rbac's metrics-reader, to the ServiceAccount.
func (e *env) bindMetricsReader(ns, sa string) {
	e.t.Helper()
	ctx := context.Background()
	name := ns + "-" + metricsauth.ReaderRole
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: metricsauth.ReaderRules()}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}
	if _, err := e.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = e.cs.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// writeServingCert writes a CA-signed serving certificate for localhost
// as tls.crt and tls.key, and returns the directory and the CA.
func writeServingCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{net.IPv4(127, 0, 0, 1)}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	// The chain is the serving certificate and the CA that signed it.
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if c.IsCA {
			pool.AddCert(c)
		}
	}
	return dir, pool
}

// waitListening waits until something accepts connections on addr.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	if err != nil {
		t.Fatalf("the metrics endpoint %s never listened: %v", addr, err)
	}
}

// scrapeAs gets url with token as bearer ("" for none).
func scrapeAs(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return fmt.Sprintf("%.200s", line)
}
