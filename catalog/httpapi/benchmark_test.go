package httpapi

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The large catalog of the benchmarks: OperatorHub's size, each bundle
// image-based with what `opm render` gives an operator's bundle: its
// package, three GVKs, a required GVK, the CSV's metadata (annotations with
// alm-examples, a description of a few KiB, keywords, links, maintainers)
// and related images, about 6 KiB a bundle.
const (
	benchPackages = 200
	benchBundles  = 20
)

// words make text that compresses as prose does (a repeated sentence
// would compress a hundredfold and flatter gzip).
var words = strings.Fields(`operator manages lifecycle application install upgrade backup restore
scaling monitoring database cluster replica storage volume secret config
network service ingress certificate rotation failover snapshot schedule
metrics alert dashboard tenant namespace quota policy role binding account
token webhook admission conversion version channel release stable candidate
fast preview deprecated migration schema field default value required
optional enum minimum maximum pattern format string integer boolean object
array map list item key label annotation selector affinity toleration taint
node pod container image registry pull digest tag probe liveness readiness`)

// prose is n bytes or so of random words.
func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()
}

// noise is n random bytes in base64, as an icon's PNG is.
func noise(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeLargeCatalog writes packages × bundles into dir, one catalog.json a
// package.
func writeLargeCatalog(tb testing.TB, dir string, packages, bundles int) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for p := range packages {
		description := prose(r, 3000)
		pkg := fmt.Sprintf("operator-%03d", p)
		var metas []any
		metas = append(metas, map[string]any{
			"schema": "olm.package", "name": pkg, "defaultChannel": "stable",
			"description": description[:1200],
			"icon":        map[string]any{"base64data": noise(r, 1500), "mediatype": "image/png"},
		})
		var entries []any
		for b := range bundles {
			e := map[string]any{"name": fmt.Sprintf("%s.v1.%d.0", pkg, b)}
			if b > 0 {
				e["replaces"] = fmt.Sprintf("%s.v1.%d.0", pkg, b-1)
				e["skipRange"] = fmt.Sprintf(">=1.0.0 <1.%d.0", b)
			}
			entries = append(entries, e)
		}
		metas = append(metas, map[string]any{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": entries})
		for b := range bundles {
			version := fmt.Sprintf("1.%d.0", b)
			examples := fmt.Sprintf(`[{"apiVersion":"%s.example.com/v1","kind":"App","metadata":{"name":"example"},"spec":{"replicas":%d,"note":%q}}]`, pkg, b, prose(r, 800))
			name := pkg + ".v" + version
			image := fmt.Sprintf("quay.io/example/%s-bundle@sha256:%064x", pkg, p*1000+b)
			metas = append(metas, map[string]any{
				"schema": "olm.bundle", "package": pkg, "name": name, "image": image,
				"properties": []any{
					map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": version}},
					map[string]any{"type": "olm.gvk", "value": map[string]any{"group": pkg + ".example.com", "kind": "App", "version": "v1"}},
					map[string]any{"type": "olm.gvk", "value": map[string]any{"group": pkg + ".example.com", "kind": "Backup", "version": "v1"}},
					map[string]any{"type": "olm.gvk", "value": map[string]any{"group": pkg + ".example.com", "kind": "Restore", "version": "v1alpha1"}},
					map[string]any{"type": "olm.gvk.required", "value": map[string]any{"group": "monitoring.coreos.com", "kind": "ServiceMonitor", "version": "v1"}},
					map[string]any{"type": "olm.csv.metadata", "value": map[string]any{
						"annotations": map[string]any{
							"alm-examples": examples,
							"capabilities": "Full Lifecycle", "categories": "Database", "containerImage": "quay.io/example/" + pkg + ":v" + version,
							"createdAt": "2026-01-01T00:00:00Z", "repository": "https://github.com/example/" + pkg, "support": "Example",
						},
						"description": description + prose(r, 300),
						"displayName": "Operator " + pkg,
						"installModes": []any{
							map[string]any{"type": "OwnNamespace", "supported": true}, map[string]any{"type": "SingleNamespace", "supported": true},
							map[string]any{"type": "MultiNamespace", "supported": false}, map[string]any{"type": "AllNamespaces", "supported": true},
						},
						"keywords":    []any{"database", "backup", "operator"},
						"links":       []any{map[string]any{"name": "Documentation", "url": "https://example.com/" + pkg}},
						"maintainers": []any{map[string]any{"email": "ops@example.com", "name": "Example"}},
						"maturity":    "stable",
						"provider":    map[string]any{"name": "Example"},
					}},
				},
				"relatedImages": []any{
					map[string]any{"name": "", "image": image},
					map[string]any{"name": "operator", "image": fmt.Sprintf("quay.io/example/%s@sha256:%064x", pkg, p*1000+b+1)},
					map[string]any{"name": "app", "image": fmt.Sprintf("quay.io/example/app@sha256:%064x", p*1000+b+2)},
				},
			})
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		for _, m := range metas {
			if err := enc.Encode(m); err != nil {
				tb.Fatal(err)
			}
		}
		path := filepath.Join(dir, pkg, "catalog.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(buf.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

var (
	largeOnce sync.Once
	largeDir  string
)

// largeCatalog writes the benchmarks' catalog once per process.
func largeCatalog(b *testing.B) string {
	largeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chartpilot-httpapi-bench-*")
		if err != nil {
			b.Fatal(err)
		}
		writeLargeCatalog(b, dir, benchPackages, benchBundles)
		largeDir = dir
	})
	return largeDir
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkLoad reads the large catalog as catalogd stores it; it reports
// the stream's size and the heap the loaded Content keeps.
func BenchmarkLoad(b *testing.B) {
	dir := largeCatalog(b)
	b.ReportAllocs()
	var c *Content
	before := heapInUse()
	for b.Loop() {
		var err error
		if c, err = Load(b.Context(), os.DirFS(dir)); err != nil {
			b.Fatal(err)
		}
	}
	kept := heapInUse() - before
	b.SetBytes(int64(len(c.Bytes())))
	b.ReportMetric(float64(len(c.Bytes()))/(1<<20), "stream-MiB")
	b.ReportMetric(float64(kept)/(1<<20), "kept-heap-MiB")
	b.ReportMetric(float64(c.Len()), "metas")
	runtime.KeepAlive(c)
}

// benchServer serves the large catalog on loopback, as a real client
// reaches it.
func benchServer(b *testing.B) (*httptest.Server, *Content) {
	b.Helper()
	c, err := Load(b.Context(), os.DirFS(largeCatalog(b)))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(NewHandler(HandlerOptions{Catalogs: map[string]*Content{"large": c}}))
	b.Cleanup(srv.Close)
	return srv, c
}

// BenchmarkAll: GET /api/v1/all of the large catalog over loopback, read
// whole: identity (Content-Length, sendfile-free copy) and gzip (what Go's
// http client, operator-controller's, asks for by default).
func BenchmarkAll(b *testing.B) {
	srv, c := benchServer(b)
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			b.SetBytes(int64(len(c.Bytes())))
			b.ReportAllocs()
			var wire int64
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/catalogs/large/api/v1/all", nil)
				req.Header.Set("Accept-Encoding", enc)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var r io.Reader = resp.Body
				cr := &countingReader{r: resp.Body}
				r = cr
				if enc == "gzip" {
					if r, err = gzip.NewReader(cr); err != nil {
						b.Fatal(err)
					}
				}
				n, err := io.Copy(io.Discard, r)
				resp.Body.Close()
				if err != nil || n != int64(len(c.Bytes())) {
					b.Fatalf("read %d of %d bytes: %v", n, len(c.Bytes()), err)
				}
				wire = cr.n
			}
			b.ReportMetric(float64(wire)/(1<<20), "wire-MiB")
		})
	}
}

// BenchmarkMetas: one package's bundles, and one bundle by name.
func BenchmarkMetas(b *testing.B) {
	srv, _ := benchServer(b)
	for name, query := range map[string]string{
		"package-bundles": "?schema=olm.bundle&package=operator-100",
		"bundle-by-name":  "?schema=olm.bundle&name=operator-100.v1.10.0",
	} {
		b.Run(name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Get(srv.URL + "/catalogs/large/api/v1/metas" + query)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
