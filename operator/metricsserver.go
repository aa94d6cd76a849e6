package operator

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/chartpilot/chartpilot/operator/metricsauth"
)

// MetricsServing says how the metrics endpoint is served.
type MetricsServing struct {
	// Secure serves the metrics over HTTPS to authenticated and authorized
	// scrapers only: a request's bearer token is checked with the API
	// server (a TokenReview), and its user must be allowed to get the
	// /metrics non-resource URL (a SubjectAccessReview), as the
	// metrics-reader ClusterRole allows; both answers are cached (see
	// metricsauth.Filter). The
	// operator then needs metricsauth.AuthRules. Without it the metrics are
	// plain HTTP to anyone who reaches the address. `chartpilot run` sets
	// it unless told --metrics-secure=false.
	Secure bool
	// CertDir holds the serving certificate and key (CertName and KeyName,
	// default tls.crt and tls.key), reloaded when they change: cert-manager's
	// Secret, mounted. Empty: a self-signed certificate made at start (the
	// traffic is encrypted; Prometheus then skips verifying it).
	CertDir, CertName, KeyName string
	// HTTP2 lets clients speak HTTP/2 to the endpoint. Off by default: the
	// HTTP/2 stream reset and rapid reset attacks (CVE-2023-44487,
	// CVE-2023-39325) cost a server more than HTTP/1.1 ones, and a scrape
	// gains nothing from it.
	HTTP2 bool
}

// Default bind addresses of the metrics endpoint, on loopback: a local
// `chartpilot run` reaches nothing beyond the machine unless told (the
// scaffolded Deployment binds :8443).
const (
	DefaultSecureMetricsAddress   = "127.0.0.1:8443"
	DefaultInsecureMetricsAddress = "127.0.0.1:8080"
)

// defaultAddress is the bind address when none is given.
func (m MetricsServing) defaultAddress() string {
	if m.Secure {
		return DefaultSecureMetricsAddress
	}
	return DefaultInsecureMetricsAddress
}

// serverOptions are controller-runtime's metrics server options for bind.
func (m MetricsServing) serverOptions(bind string) (metricsserver.Options, error) {
	o := metricsserver.Options{BindAddress: bind}
	if !m.Secure || bind == "0" {
		return o, nil
	}
	o.SecureServing = true
	o.FilterProvider = metricsFilter
	if !m.HTTP2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	if m.CertDir == "" {
		return o, nil
	}
	o.CertDir, o.CertName, o.KeyName = m.CertDir, m.CertName, m.KeyName
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
	// controller-runtime falls back to a self-signed certificate when the
	// files are missing: a certificate asked for and not found is an error.
	for _, f := range []string{o.CertName, o.KeyName} {
		path := filepath.Join(o.CertDir, f)
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return o, fmt.Errorf("metrics certificate directory %s: %s not found", o.CertDir, f)
			}
			return o, fmt.Errorf("metrics certificate: %w", err)
		}
	}
	return o, nil
}

// metricsFilter is the metrics server's FilterProvider: metricsauth's
// filter, asking the API server through the manager's client.
func metricsFilter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	f, err := metricsauth.New(cfg, httpClient, metricsauth.Options{})
	if err != nil {
		return nil, err
	}
	return f.Wrap, nil
}
