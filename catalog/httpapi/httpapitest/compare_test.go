package httpapitest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chartpilot/chartpilot/catalog/httpapi"
)

// testCatalog is httpapi's test catalog: packages a and b, a meta of
// another schema and one without a schema.
const testCatalog = "../testdata/catalog"

func load(t *testing.T, fsys fs.FS) *httpapi.Content {
	t.Helper()
	c, err := httpapi.Load(t.Context(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serveTLS serves c as "test" on loopback over HTTPS, as catalog serve
// does, and returns the endpoint with a client that trusts it.
func serveTLS(t *testing.T, c *httpapi.Content) Endpoint {
	t.Helper()
	s, err := httpapi.NewServer(t.Context(), httpapi.ServerOptions{
		Address:        "127.0.0.1:0",
		HandlerOptions: httpapi.HandlerOptions{Catalogs: map[string]*httpapi.Content{"test": c}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		s.Close()
	})
	pemData, err := os.ReadFile(s.CertFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	return Endpoint{URL: s.URL(), Client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
}

// serve serves h over plain HTTP.
func serve(t *testing.T, h http.Handler) Endpoint {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return Endpoint{URL: srv.URL}
}

func handler(opts httpapi.HandlerOptions, c *httpapi.Content) http.Handler {
	opts.Catalogs = map[string]*httpapi.Content{"test": c}
	return httpapi.NewHandler(opts)
}

func standardQueries(t *testing.T, c *httpapi.Content) []Query {
	t.Helper()
	q, err := StandardQueries(c.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestCompareTwoInstancesAgree: two servers of the same catalog, loaded a
// second apart (so their Last-Modified differ), over HTTPS with two
// certificates, show no difference on any standard query.
func TestCompareTwoInstancesAgree(t *testing.T) {
	a := load(t, os.DirFS(testCatalog))
	time.Sleep(time.Until(a.ModTime().Truncate(time.Second).Add(time.Second)))
	b := load(t, os.DirFS(testCatalog))
	if a.ModTime().Unix() == b.ModTime().Unix() {
		t.Fatal("loaded within the same second")
	}
	queries := standardQueries(t, a)
	if len(queries) < 80 {
		t.Errorf("only %d standard queries", len(queries))
	}
	diffs, err := Diff(t.Context(), serveTLS(t, a), serveTLS(t, b), "test", queries)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	Compare(t, serveTLS(t, a), serveTLS(t, b), "test", queries)
}

// mapFS reads a directory into memory, for changing it.
func mapFS(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(dir + "/" + p)
		out[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompareFindsDifferences: a server that differs in one way is caught,
// on the query and in the part (status, body, header) where it differs.
func TestCompareFindsDifferences(t *testing.T) {
	ours := load(t, os.DirFS(testCatalog))
	queries := standardQueries(t, ours)

	changed := mapFS(t, testCatalog)
	changed["b/catalog.json"].Data = []byte(strings.Replace(string(changed["b/catalog.json"].Data), "b-bundle:v2.0.0", "b-bundle:v2.0.10", 1))
	reordered := mapFS(t, testCatalog)
	reordered["0/catalog.json"] = reordered["b/catalog.json"]
	delete(reordered, "b/catalog.json")

	for _, tc := range []struct {
		name   string
		theirs http.Handler
		// want are differences that must be found: a query's text, and what.
		want [][2]string
	}{
		{
			name:   "one bundle's image",
			theirs: handler(httpapi.HandlerOptions{}, load(t, changed)),
			want: [][2]string{
				{"GET api/v1/all", "body at line 7 of 11/11"},
				{"GET api/v1/metas?schema=olm.bundle", "body at line 3"},
				{"GET api/v1/all [Range: bytes=0-99]", "Content-Range"},
				// The parts name the total length; the boundary is not a difference.
				{"GET api/v1/all [Range: bytes=0-0,10-19]", "body at line 2"},
				{"HEAD api/v1/all", "Content-Length"},
			},
		},
		{
			name:   "the same metas in another order",
			theirs: handler(httpapi.HandlerOptions{}, load(t, reordered)),
			want: [][2]string{
				{"GET api/v1/all", "body order (the same lines in another order) at line 1"},
				{"GET api/v1/metas?schema=olm.package", "body order"},
			},
		},
		{
			name:   "no metas endpoint",
			theirs: handler(httpapi.HandlerOptions{DisableMetas: true}, ours),
			want: [][2]string{
				{"GET api/v1/metas?schema=olm.package", "status"},
				{"GET api/v1/metas?schema=olm.package&version=1", "status"},
			},
		},
		{
			name:   "an ETag",
			theirs: withHeader(handler(httpapi.HandlerOptions{}, ours), "ETag", `"x"`),
			want:   [][2]string{{"GET api/v1/all", "Etag"}, {"GET /", "Etag"}},
		},
		{
			name:   "no compression",
			theirs: withoutGzip(handler(httpapi.HandlerOptions{}, ours)),
			want:   [][2]string{{"GET api/v1/all [Accept-Encoding: gzip]", "Content-Encoding"}},
		},
		{
			name:   "no Last-Modified",
			theirs: withoutLastModified(handler(httpapi.HandlerOptions{}, ours)),
			want:   [][2]string{{"GET api/v1/all", "Last-Modified"}, {"GET api/v1/metas?schema=olm.package", "Last-Modified"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diffs, err := Diff(t.Context(), serve(t, handler(httpapi.HandlerOptions{}, ours)), serve(t, tc.theirs), "test", queries)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) == 0 {
				t.Fatal("no difference found")
			}
			for _, w := range tc.want {
				found := false
				for _, d := range diffs {
					found = found || d.Query.String() == w[0] && strings.HasPrefix(d.What, w[1])
				}
				if !found {
					t.Errorf("no difference %q on %q among:\n%s", w[1], w[0], join(diffs))
				}
			}

			// Compare reports each as a test error.
			rec := &recorder{TB: t}
			Compare(rec, serve(t, handler(httpapi.HandlerOptions{}, ours)), serve(t, tc.theirs), "test", queries)
			if len(rec.errors) != len(diffs) {
				t.Errorf("Compare reported %d errors for %d differences", len(rec.errors), len(diffs))
			}
		})
	}
}

func TestCompareIgnoresHeadersAProxyAdds(t *testing.T) {
	c := load(t, os.DirFS(testCatalog))
	theirs := serve(t, withHeader(handler(httpapi.HandlerOptions{}, c), "Audit-Id", "1234"))
	queries := []Query{{Path: "api/v1/all"}}
	if diffs, err := Diff(t.Context(), serve(t, handler(httpapi.HandlerOptions{}, c)), theirs, "test", queries); err != nil || len(diffs) != 1 {
		t.Errorf("without IgnoreHeaders: %v %v", diffs, err)
	}
	theirs.IgnoreHeaders = []string{"audit-id"}
	if diffs, err := Diff(t.Context(), serve(t, handler(httpapi.HandlerOptions{}, c)), theirs, "test", queries); err != nil || len(diffs) != 0 {
		t.Errorf("with IgnoreHeaders: %v %v", diffs, err)
	}
}

func TestDiffFailsWithoutAnAnswer(t *testing.T) {
	c := load(t, os.DirFS(testCatalog))
	_, err := Diff(t.Context(), serve(t, handler(httpapi.HandlerOptions{}, c)), Endpoint{URL: "http://127.0.0.1:1"}, "test", []Query{{Path: "api/v1/all"}})
	if err == nil || !strings.HasPrefix(err.Error(), "theirs: GET api/v1/all") {
		t.Errorf("error %v", err)
	}
}

func TestStandardQueries(t *testing.T) {
	c := load(t, os.DirFS(testCatalog))
	queries := standardQueries(t, c)
	seen := map[string]bool{}
	for _, q := range queries {
		if seen[q.String()] {
			t.Errorf("%s twice", q)
		}
		seen[q.String()] = true
	}
	for _, want := range []string{
		"GET api/v1/all",
		"HEAD api/v1/all",
		"GET api/v1/metas?schema=olm.deprecations",
		"GET api/v1/metas?schema=example.com%2Fcustom",
		"GET api/v1/metas?package=a&name=stable",
		"GET api/v1/metas?schema=olm.bundle&package=b&name=b.v2.0.0",
		"GET api/v1/metas?name=orphan",
		"GET /catalogs/no-such-catalog/api/v1/all",
		"POST api/v1/all",
	} {
		if !seen[want] {
			t.Errorf("no %s", want)
		}
	}
	if _, err := StandardQueries([]byte("{\"schema\":\"olm.package\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad stream: %v", err)
	}
}

func TestSpread(t *testing.T) {
	var s []string
	for i := range 1000 {
		s = append(s, fmt.Sprint(i))
	}
	got := spread(s)
	if len(got) != maxPerKind || got[0] != "0" || got[len(got)-1] != "999" {
		t.Errorf("spread: %d values, %s..%s", len(got), got[0], got[len(got)-1])
	}
	if got := spread(s[:3]); len(got) != 3 {
		t.Errorf("spread of 3: %v", got)
	}
}

func join(diffs []Difference) string {
	var b strings.Builder
	for _, d := range diffs {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func withHeader(h http.Handler, k, v string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(k, v)
		h.ServeHTTP(w, r)
	})
}

func withoutGzip(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		h.ServeHTTP(w, r)
	})
}

func withoutLastModified(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&dropLastModified{ResponseWriter: w}, r)
	})
}

type dropLastModified struct{ http.ResponseWriter }

func (d *dropLastModified) WriteHeader(code int) {
	d.Header().Del("Last-Modified")
	d.ResponseWriter.WriteHeader(code)
}

func (d *dropLastModified) Write(b []byte) (int, error) {
	d.Header().Del("Last-Modified")
	return d.ResponseWriter.Write(b)
}

// TestCompareRefusesTwoEmptyAnswers: two servers that serve no such
// catalog agree on every query, and prove nothing: Compare says so.
func TestCompareRefusesTwoEmptyAnswers(t *testing.T) {
	c := load(t, os.DirFS(testCatalog))
	queries := standardQueries(t, c)
	rec := &recorder{TB: t}
	Compare(rec, serve(t, handler(httpapi.HandlerOptions{}, c)), serve(t, handler(httpapi.HandlerOptions{}, c)), "nothing", queries)
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "the comparison saw no content") {
		t.Errorf("Compare of two servers without the catalog reported %q", rec.errors)
	}
}
