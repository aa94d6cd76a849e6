package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/catalog/httpapi/httpapitest"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// serveBoth serves opts until the test ends and returns the server.
func serveBoth(t *testing.T, opts Options) *Server {
	t.Helper()
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

// endpoint is the HTTP API of s, with a client that trusts its certificate.
func endpoint(t *testing.T, s *Server) httpapitest.Endpoint {
	t.Helper()
	e := httpapitest.Endpoint{URL: s.HTTP().URL()}
	if f := s.HTTP().CertFile(); f != "" {
		pemData, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pemData)
		e.Client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	return e
}

// getBody fetches url with e's client.
func getBody(t *testing.T, e httpapitest.Endpoint, url string) (int, string) {
	t.Helper()
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
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

// TestServeHTTPBesideGRPC: one server answers both APIs for a directory:
// the registry gRPC API and catalogd's, over HTTPS, the stream as
// httpapi.Load reads it.
func TestServeHTTPBesideGRPC(t *testing.T) {
	dir := serveTestCatalog(t)
	var logged strings.Builder
	s := serveBoth(t, Options{
		Dir: dir, Address: "127.0.0.1:0", CatalogName: "local", Log: &logged,
		HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0"},
	})
	if s.CatalogName != "local" || !strings.HasPrefix(s.HTTP().BaseURL("local"), "https://127.0.0.1:") {
		t.Errorf("catalog %q at %s", s.CatalogName, s.HTTP().BaseURL("local"))
	}

	conn := dialServer(t, s)
	p, err := api.NewRegistryClient(conn).GetPackage(t.Context(), &api.GetPackageRequest{Name: "w"})
	if err != nil || p.DefaultChannelName != "stable" {
		t.Fatalf("gRPC GetPackage: %v %v", p, err)
	}

	want, err := httpapi.Load(t.Context(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	e := endpoint(t, s)
	if code, body := getBody(t, e, s.HTTP().BaseURL("local")+"/"+httpapi.AllPath); code != 200 || body != string(want.Bytes()) {
		t.Errorf("all: %d\n%s\nwant:\n%s", code, body, want.Bytes())
	}
	code, body := getBody(t, e, s.HTTP().BaseURL("local")+"/"+httpapi.MetasPath+"?schema=olm.package&name=w")
	if code != 200 || !strings.HasPrefix(body, `{"defaultChannel":"stable",`) || strings.Count(body, "\n") != 1 {
		t.Errorf("metas: %d %s", code, body)
	}
	if !strings.Contains(logged.String(), "as catalogd serves them") || !strings.Contains(logged.String(), "GET /catalogs/local/api/v1/all HTTP/1.1 200") {
		t.Errorf("log:\n%s", logged.String())
	}
}

// dialServer connects to the gRPC API of s.
func dialServer(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestServeHTTPOnly: without the gRPC API, a catalog is served as catalogd
// serves it, valid or not; the gRPC API would refuse it.
func TestServeHTTPOnly(t *testing.T) {
	dir := catalogtest.WriteCatalog(t, catalogtest.Package("a", "stable", []string{"1.0.0", "1.1.0"}))
	if _, err := NewServer(t.Context(), Options{Dir: dir, Address: "127.0.0.1:0"}); err == nil {
		t.Fatal("the gRPC API served an invalid catalog")
	}
	s := serveBoth(t, Options{Dir: dir, NoGRPC: true, CatalogName: "invalid", HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0", PlainHTTP: true}})
	if s.Addr() != "" {
		t.Errorf("gRPC on %s", s.Addr())
	}
	code, body := getBody(t, endpoint(t, s), s.HTTP().BaseURL("invalid")+"/"+httpapi.MetasPath+"?schema=olm.bundle")
	if code != 200 || strings.Count(body, "\n") != 2 {
		t.Errorf("metas: %d %s", code, body)
	}
}

func TestServeHTTPErrors(t *testing.T) {
	dir := serveTestCatalog(t)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{name: "nothing to serve", opts: Options{Dir: dir, NoGRPC: true}, want: "nothing to serve"},
		{name: "a name that is no ClusterCatalog name", opts: Options{Dir: dir, CatalogName: "My_Catalog", HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0"}},
			want: `catalog name "My_Catalog" is not a ClusterCatalog name`},
		{name: "a directory whose name is none", opts: Options{Dir: filepath.Join(t.TempDir(), "Bad_Dir"), HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0"}},
			want: `catalog name "Bad_Dir"`},
		{name: "a file that does not load", opts: Options{Dir: badCatalog(t), NoGRPC: true, HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0"}},
			want: "over HTTP: loading catalog: p/catalog.yaml"},
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

// badCatalog is a catalog directory whose one file is not YAML.
func badCatalog(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "bad")
	catalogtest.WriteFile(t, filepath.Join(dir, "p", "catalog.yaml"), "schema: [\n")
	return dir
}

func TestDefaultCatalogName(t *testing.T) {
	for _, tc := range []struct{ dir, image, want string }{
		{dir: "/tmp/x/catalog", want: "catalog"},
		{dir: "/tmp/x/catalog/", want: "catalog"},
		{image: "registry.local:5000/me/my-operator-catalog:v0.2.0", want: "my-operator-catalog"},
		{image: "quay.io/me/op-index@sha256:" + strings.Repeat("a", 64), want: "op-index"},
		{image: "localhost/catalog", want: "catalog"},
	} {
		if got := DefaultCatalogName(tc.dir, tc.image); got != tc.want {
			t.Errorf("DefaultCatalogName(%q, %q) = %q, want %q", tc.dir, tc.image, got, tc.want)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := DefaultCatalogName(".", ""); got != filepath.Base(wd) {
		t.Errorf("DefaultCatalogName(.) = %q", got)
	}
}

// TestServeHTTPImage: a catalog image pulled from a registry on loopback
// answers, under its repository's name, what its directory answers.
func TestServeHTTPImage(t *testing.T) {
	dir := serveTestCatalog(t)
	img, err := oci.BuildImage(t.Context(), oci.ImageOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/chartpilot/my-catalog:v1"
	if _, err := ociimage.Push(t.Context(), img, ref); err != nil {
		t.Fatal(err)
	}

	fromImage := serveBoth(t, Options{Image: ref, NoGRPC: true, HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0"}})
	if fromImage.CatalogName != "my-catalog" || fromImage.Digest == "" {
		t.Errorf("catalog %q, digest %q", fromImage.CatalogName, fromImage.Digest)
	}
	fromDir := serveBoth(t, Options{Dir: dir, NoGRPC: true, CatalogName: "my-catalog", HTTP: &httpapi.ServerOptions{Address: "127.0.0.1:0", PlainHTTP: true}})
	want, err := httpapi.Load(t.Context(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	queries, err := httpapitest.StandardQueries(want.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	httpapitest.Compare(t, endpoint(t, fromImage), endpoint(t, fromDir), "my-catalog", queries)
}
