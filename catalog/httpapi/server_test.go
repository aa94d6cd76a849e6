package httpapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startServer serves the test catalog as "test" with opts on a free
// loopback port until the test ends.
func startServer(t *testing.T, opts ServerOptions) *Server {
	t.Helper()
	opts.Catalogs = map[string]*Content{"test": loadTest(t)}
	opts.Address = "127.0.0.1:0"
	s, err := NewServer(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// trusting is a client that trusts the PEM certificate in file and, to
// show the server refuses it, would speak HTTP/2.
func trusting(t *testing.T, file string) *http.Client {
	t.Helper()
	pemData, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		t.Fatalf("%s holds no certificate", file)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
}

// get fetches url and returns the answer and its body.
func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestServerSelfSigned: HTTPS with a generated certificate a client trusts
// by its PEM, HTTP/1.1 only and TLS 1.2 or later as catalogd's, a real
// client's answers (gzip undone by the transport) the catalog's.
func TestServerSelfSigned(t *testing.T) {
	s := startServer(t, ServerOptions{Hosts: []string{"catalog.example"}})
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Errorf("URL %s", s.URL())
	}
	if want := s.URL() + "/catalogs/test"; s.BaseURL("test") != want {
		t.Errorf("BaseURL %s, want %s", s.BaseURL("test"), want)
	}
	c := trusting(t, s.CertFile())
	resp, body := get(t, c, s.BaseURL("test")+"/"+AllPath)
	if resp.StatusCode != 200 || body != wantLines(t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9) {
		t.Errorf("all: %d %q", resp.StatusCode, body)
	}
	if !resp.Uncompressed {
		t.Error("the transport's gzip request was not answered compressed")
	}
	if resp.Proto != "HTTP/1.1" {
		t.Errorf("protocol %s, want HTTP/1.1 (catalogd offers no h2)", resp.Proto)
	}
	if v := resp.TLS.Version; v < tls.VersionTLS12 {
		t.Errorf("TLS version %x", v)
	}
	resp, body = get(t, c, s.BaseURL("test")+"/"+MetasPath+"?schema=olm.package")
	if resp.StatusCode != 200 || body != wantLines(t, 0, 4) {
		t.Errorf("metas: %d %q", resp.StatusCode, body)
	}

	// The certificate names loopback and the extra host.
	block, _ := pem.Decode(must(os.ReadFile(s.CertFile())))
	cert := must(x509.ParseCertificate(block.Bytes))
	for _, h := range []string{"localhost", "catalog.example", "127.0.0.1", "::1"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Error(err)
		}
	}

	// TLS 1.1 is refused; a client that does not trust the certificate too.
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Transport.(*http.Transport).TLSClientConfig.RootCAs, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get(s.URL()); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	var unknown *tls.CertificateVerificationError
	if _, err := http.Get(s.URL()); !errors.As(err, &unknown) {
		t.Errorf("an untrusting client: %v", err)
	}
}

func TestServerPlainHTTP(t *testing.T) {
	s := startServer(t, ServerOptions{PlainHTTP: true})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || s.CertFile() != "" {
		t.Errorf("URL %s, certificate %q", s.URL(), s.CertFile())
	}
	resp, body := get(t, http.DefaultClient, s.BaseURL("nope")+"/"+AllPath)
	if resp.StatusCode != 404 || body != "404 Not Found\n" {
		t.Errorf("unknown catalog: %d %q", resp.StatusCode, body)
	}
}

// TestServerGivenCertificate: catalogd's --tls-cert and --tls-key.
func TestServerGivenCertificate(t *testing.T) {
	cert, certPEM, err := selfSigned([]string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyDER := must(x509.MarshalPKCS8PrivateKey(cert.PrivateKey))
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ServerOptions{CertFile: certFile, KeyFile: keyFile})
	if s.CertFile() != certFile {
		t.Errorf("CertFile %s, want %s", s.CertFile(), certFile)
	}
	if resp, _ := get(t, trusting(t, certFile), s.BaseURL("test")+"/"+AllPath); resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func TestNewServerErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opts ServerOptions
		want string
	}{
		{name: "a certificate without its key", opts: ServerOptions{CertFile: "tls.crt"}, want: "both its certificate and its key"},
		{name: "a key without its certificate", opts: ServerOptions{KeyFile: "tls.key"}, want: "both its certificate and its key"},
		{name: "a certificate over plain HTTP", opts: ServerOptions{PlainHTTP: true, CertFile: "a", KeyFile: "b"}, want: "plain HTTP"},
		{name: "missing certificate files", opts: ServerOptions{CertFile: filepath.Join(dir, "no.crt"), KeyFile: filepath.Join(dir, "no.key")}, want: "no.crt"},
		{name: "a bad address", opts: ServerOptions{Address: "127.0.0.1:notaport"}, want: "notaport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewServer(t.Context(), tc.opts)
			if err == nil {
				s.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// TestServerStops: the context's end stops Serve, after a request in flight
// has finished, and the generated certificate goes with Close.
func TestServerStops(t *testing.T) {
	s, err := NewServer(t.Context(), ServerOptions{Address: "127.0.0.1:0", HandlerOptions: HandlerOptions{Catalogs: map[string]*Content{"test": loadTest(t)}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	c := trusting(t, s.CertFile())
	if resp, _ := get(t, c, s.BaseURL("test")+"/"+AllPath); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		t.Error("still listening")
	}
	cert := s.CertFile()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cert); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("certificate left: %v", err)
	}
}

func TestCertificateHosts(t *testing.T) {
	for _, tc := range []struct {
		host  string
		extra []string
		want  string
	}{
		{host: "127.0.0.1", want: "127.0.0.1 ::1 localhost"},
		{host: "0.0.0.0", want: "127.0.0.1 ::1 localhost"},
		{host: "::", want: "127.0.0.1 ::1 localhost"},
		{host: "", want: "127.0.0.1 ::1 localhost"},
		{host: "10.1.2.3", extra: []string{"catalog.example", "localhost"}, want: "10.1.2.3 127.0.0.1 ::1 catalog.example localhost"},
	} {
		if got := strings.Join(certificateHosts(tc.host, tc.extra), " "); got != tc.want {
			t.Errorf("certificateHosts(%q, %q) = %s, want %s", tc.host, tc.extra, got, tc.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
