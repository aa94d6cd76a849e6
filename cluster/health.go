package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// transport picks how a probe reaches a component.
type transport int

const (
	plainHTTP transport = iota
	// clusterTLS trusts the cluster's CA and presents the admin certificate.
	clusterTLS
)

// probe GETs url and wants a 200 whose body contains want.
func (c *Cluster) probe(ctx context.Context, t transport, url, want string) error {
	client := &http.Client{Timeout: 3 * time.Second}
	if t == clusterTLS {
		cfg, err := c.tlsConfig()
		if err != nil {
			return err
		}
		client.Transport = &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	} else {
		client.Transport = &http.Transport{DisableKeepAlives: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	if !hasText(string(body), want) {
		return fmt.Errorf("GET %s: unexpected answer %.200q", url, body)
	}
	return nil
}

func (c *Cluster) tlsConfig() (*tls.Config, error) {
	set := c.pki()
	caPEM, err := os.ReadFile(set.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	certFile, keyFile := set.Cert(adminUser)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the admin certificate: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
