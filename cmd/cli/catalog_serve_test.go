package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// lockedBuffer is an output a running command writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe runs chartpilot catalog serve with args until the test ends,
// and returns its output once it says where the HTTP API is.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	var out lockedBuffer
	cmd := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	cmd.SetArgs(append([]string{"catalog", "serve"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "HTTP API: ") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve stopped: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
	}
	return out.String()
}

func TestCatalogServeHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-catalog")
	if _, err := run(t, "catalog", "init", "--dir", dir, "--from-bundle", writeTestBundle(t, "demo", "0.1.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "catalog", "add", "--dir", dir, writeTestBundle(t, "demo", "0.1.0")); err != nil {
		t.Fatal(err)
	}
	urlOf := regexp.MustCompile(`HTTP API: (\S+)/api/v1/all`)

	t.Run("https beside gRPC", func(t *testing.T) {
		out := startServe(t, dir, "--port", "0", "--http", "127.0.0.1:0")
		if !strings.Contains(out, "serving catalog "+dir+" on 127.0.0.1:") || !strings.Contains(out, `as "my-catalog"`) {
			t.Errorf("output:\n%s", out)
		}
		m := urlOf.FindStringSubmatch(out)
		cert := regexp.MustCompile(`curl --cacert (\S+)\)`).FindStringSubmatch(out)
		if m == nil || cert == nil || !strings.HasPrefix(m[1], "https://127.0.0.1:") {
			t.Fatalf("output:\n%s", out)
		}
		pemData, err := os.ReadFile(cert[1])
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pemData)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		code, body := fetchBody(t, c, m[1]+"/api/v1/metas?schema=olm.bundle")
		if code != 200 || !strings.Contains(body, `"name":"demo.v0.1.0"`) || strings.Count(body, "\n") != 1 {
			t.Errorf("metas: %d %s", code, body)
		}
	})

	t.Run("plain HTTP alone, named, without metas", func(t *testing.T) {
		out := startServe(t, dir, "--grpc=false", "--http", "127.0.0.1:0", "--plain-http", "--catalog-name", "operatorhubio", "--metas=false")
		if strings.Contains(out, " on 127.0.0.1:") || strings.Contains(out, "certificate") {
			t.Errorf("output:\n%s", out)
		}
		m := urlOf.FindStringSubmatch(out)
		if m == nil || !strings.HasPrefix(m[1], "http://127.0.0.1:") || !strings.HasSuffix(m[1], "/catalogs/operatorhubio") {
			t.Fatalf("output:\n%s", out)
		}
		if code, body := fetchBody(t, http.DefaultClient, m[1]+"/api/v1/all"); code != 200 || strings.Count(body, "\n") != 3 {
			t.Errorf("all: %d %s", code, body)
		}
		if code, _ := fetchBody(t, http.DefaultClient, m[1]+"/api/v1/metas"); code != 404 {
			t.Errorf("metas: %d", code)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "nothing to serve", args: []string{"--grpc=false"}, want: "--grpc=false leaves nothing to serve"},
		{name: "HTTP flags without --http", args: []string{"--plain-http", "--catalog-name", "x"}, want: "--catalog-name, --plain-http configure the HTTP API"},
		{name: "a certificate without its key", args: []string{"--http", "127.0.0.1:0", "--tls-cert", "c.pem"}, want: "--tls-cert and --tls-key go together"},
		{name: "a certificate over plain HTTP", args: []string{"--http", "127.0.0.1:0", "--plain-http", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, want: "--plain-http serves no certificate"},
		{name: "a bad catalog name", args: []string{"--http", "127.0.0.1:0", "--catalog-name", "Not_A_Name", "--port", "0"}, want: `catalog name "Not_A_Name" is not a ClusterCatalog name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, append([]string{"catalog", "serve", dir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func fetchBody(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
