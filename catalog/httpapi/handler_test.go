package httpapi

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/klauspost/compress/zstd"
)

// anyLength is the length of an answer whose compressed size is not the test's.
const anyLength = -2

// absent is the header value that a want names for a header that must not be there.
const absent = "<absent>"

// exchange is one request and what must come back.
type exchange struct {
	name   string
	method string // GET when empty
	target string // path and query
	header map[string]string
	// status and body are the answer's; body is after gzip is undone.
	status int
	body   string
	// length is the Content-Length the client sees, -1 for none, anyLength
	// for a compressed answer's.
	length int64
	// want are headers with their values, or absent.
	want map[string]string
}

// decoded undoes the Content-Encoding of an answer (the package's tests
// cannot import httpapitest.Decode, which imports the package).
func decoded(t *testing.T, encoding string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	var err error
	switch encoding {
	case "":
		return body
	case "gzip":
		r, err = gzip.NewReader(bytes.NewReader(body))
	case "zstd":
		var d *zstd.Decoder
		if d, err = zstd.NewReader(bytes.NewReader(body)); err == nil {
			defer d.Close()
			r = d
		}
	default:
		t.Fatalf("an answer in %q, which catalogd never sends", encoding)
	}
	if err != nil {
		t.Fatalf("a %s answer that is no %s: %v", encoding, encoding, err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("a %s answer that is no %s: %v", encoding, encoding, err)
	}
	return out
}

// do sends e to the server at url.
func (e exchange) do(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), cmpOr(e.method, http.MethodGet), url+e.target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range e.header {
		req.Header.Set(k, v)
	}
	// The client asks for gzip only where a case says so, and undoes it
	// here rather than in the transport, so the headers stay as sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, decoded(t, resp.Header.Get("Content-Encoding"), body)
}

// check compares the answer with e.
func (e exchange) check(t *testing.T, url string) {
	t.Helper()
	resp, body := e.do(t, url)
	if resp.StatusCode != e.status {
		t.Errorf("status %d, want %d", resp.StatusCode, e.status)
	}
	if string(body) != e.body {
		t.Errorf("body:\n%q\nwant:\n%q", body, e.body)
	}
	if e.length != anyLength && resp.ContentLength != e.length {
		t.Errorf("Content-Length %d, want %d", resp.ContentLength, e.length)
	}
	for k, v := range e.want {
		got, ok := resp.Header[http.CanonicalHeaderKey(k)]
		switch {
		case v == absent && ok:
			t.Errorf("%s: %q, want none", k, got)
		case v != absent && (len(got) != 1 || got[0] != v):
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// merge returns the union of header wants, later ones winning.
func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var (
	lastModified = testModTime.Format(http.TimeFormat)
	// stream is a JSON Lines answer of the test catalog.
	stream = map[string]string{
		"Content-Type":     ContentType,
		"Last-Modified":    lastModified,
		"Vary":             "Accept-Encoding",
		"Content-Encoding": absent,
		"ETag":             absent,
		"Cache-Control":    absent,
	}
	// whole is /api/v1/all's: ranges offered.
	whole = merge(stream, map[string]string{"Accept-Ranges": "bytes"})
	// metas is the metas endpoint's: no ranges.
	metas = merge(stream, map[string]string{"Accept-Ranges": absent})
	// plainError is an error of net/http's http.Error.
	plainError = map[string]string{
		"Content-Type":           "text/plain; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Vary":                   "Accept-Encoding",
		"Last-Modified":          absent,
	}
	// gzipped is a compressed answer: no length, no ranges.
	gzipped = map[string]string{"Content-Encoding": "gzip", "Accept-Ranges": absent}
	zstded  = map[string]string{"Content-Encoding": "zstd", "Accept-Ranges": absent}
	// bare is a 304 or 412: only what guides a cache.
	bare = map[string]string{"Last-Modified": lastModified, "Content-Type": absent, "Vary": "Accept-Encoding"}
)

// testServer serves the test catalog as "test" (and an empty catalog as
// "empty") and returns its URL.
func testServer(t *testing.T, opts HandlerOptions) string {
	t.Helper()
	empty, err := Load(t.Context(), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	empty.modTime = testModTime
	opts.Catalogs = map[string]*Content{"test": loadTest(t), "empty": empty}
	srv := httptest.NewServer(NewHandler(opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHandler(t *testing.T) {
	url := testServer(t, HandlerOptions{})
	all := wantLines(t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	n := int64(len(all))
	past, future := "Mon, 02 Jan 2006 15:04:05 GMT", "Fri, 01 Jan 2100 00:00:00 GMT"
	// metasOf is the answer to a metas query: small answers get a length
	// from net/http, as catalogd's do.
	metasOf := func(name, query string, lines ...int) exchange {
		body := wantLines(t, lines...)
		return exchange{name: name, target: "/catalogs/test/api/v1/metas" + query, status: 200, body: body, length: int64(len(body)), want: metas}
	}
	for _, tc := range []exchange{
		// /api/v1/all.
		{name: "all", target: "/catalogs/test/api/v1/all", status: 200, body: all, length: n, want: whole},
		{name: "all of an empty catalog", target: "/catalogs/empty/api/v1/all", status: 200, length: 0, want: whole},
		{name: "all, HEAD", method: "HEAD", target: "/catalogs/test/api/v1/all", status: 200, length: n, want: whole},
		{name: "all, a query is ignored", target: "/catalogs/test/api/v1/all?schema=olm.package&x=y", status: 200, body: all, length: n, want: whole},
		{name: "all, a range", target: "/catalogs/test/api/v1/all", header: map[string]string{"Range": "bytes=0-9"},
			status: 206, body: all[:10], length: 10, want: merge(whole, map[string]string{"Content-Range": fmt.Sprintf("bytes 0-9/%d", n)})},
		{name: "all, a suffix range", target: "/catalogs/test/api/v1/all", header: map[string]string{"Range": "bytes=-5"},
			status: 206, body: all[n-5:], length: 5, want: merge(whole, map[string]string{"Content-Range": fmt.Sprintf("bytes %d-%d/%d", n-5, n-1, n)})},
		{name: "all, an unsatisfiable range", target: "/catalogs/test/api/v1/all", header: map[string]string{"Range": "bytes=99999-"},
			status: 416, body: "invalid range: failed to overlap\n", length: 33, want: map[string]string{"Content-Range": fmt.Sprintf("bytes */%d", n)}},
		{name: "all, not modified since", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Modified-Since": future},
			status: 304, length: 0, want: bare},
		{name: "all, modified since", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Modified-Since": past},
			status: 200, body: all, length: n, want: whole},
		{name: "all, a malformed If-Modified-Since is ignored", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Modified-Since": "yesterday"},
			status: 200, body: all, length: n, want: whole},
		{name: "all, If-None-Match *", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-None-Match": "*"}, status: 304, length: 0, want: bare},
		{name: "all, If-None-Match a tag", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-None-Match": `"x"`}, status: 200, body: all, length: n, want: whole},
		{name: "all, If-Match a tag", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Match": `"x"`}, status: 412, length: 0},
		{name: "all, If-Unmodified-Since past", target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Unmodified-Since": past}, status: 412, length: 0},
		{name: "all, gzip", target: "/catalogs/test/api/v1/all", header: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, body: all, length: anyLength, want: merge(whole, gzipped)},
		{name: "all, gzip small: not compressed", target: "/catalogs/empty/api/v1/all", header: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, length: 0, want: whole},
		{name: "all, zstd", target: "/catalogs/test/api/v1/all", header: map[string]string{"Accept-Encoding": "zstd"},
			status: 200, body: all, length: anyLength, want: merge(whole, zstded)},
		{name: "all, zstd before gzip", target: "/catalogs/test/api/v1/all", header: map[string]string{"Accept-Encoding": "gzip, deflate, br, zstd"},
			status: 200, body: all, length: anyLength, want: merge(whole, zstded)},
		{name: "all, gzip HEAD: not compressed", method: "HEAD", target: "/catalogs/test/api/v1/all", header: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, length: n, want: whole},
		{name: "all, gzip with a range: not compressed", target: "/catalogs/test/api/v1/all", header: map[string]string{"Accept-Encoding": "gzip", "Range": "bytes=0-1199"},
			status: 206, body: all[:1200], length: 1200, want: merge(whole, map[string]string{"Content-Range": fmt.Sprintf("bytes 0-1199/%d", n)})},
		{name: "all of an unknown catalog", target: "/catalogs/nope/api/v1/all", status: 404, body: "404 Not Found\n", length: 14, want: plainError},

		// /api/v1/metas: every combination of parameters.
		metasOf("metas, no parameter: the whole stream", "", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
		metasOf("metas, empty parameters: the whole stream", "?schema=&package=&name=", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
		metasOf("metas, a parameter without a value", "?schema", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
		metasOf("metas, schema", "?schema=olm.package", 0, 4),
		metasOf("metas, schema of none", "?schema=nope"),
		metasOf("metas, package: not its olm.package, not a meta without schema", "?package=a", 1, 2, 3),
		metasOf("metas, name across schemas", "?name=a", 0, 8),
		metasOf("metas, name across packages", "?name=stable", 1, 5),
		metasOf("metas, schema and package", "?schema=olm.channel&package=b", 5),
		metasOf("metas, schema and name", "?schema=olm.package&name=a", 0),
		metasOf("metas, package and name", "?package=a&name=stable", 1),
		metasOf("metas, all three", "?schema=olm.bundle&package=a&name=a.v1.1.0", 3),
		metasOf("metas, all three, no match", "?schema=olm.bundle&package=b&name=a.v1.1.0"),
		metasOf("metas, only the first of a repeated parameter", "?schema=olm.package&schema=olm.channel", 0, 4),
		metasOf("metas, an escaped value", "?schema=example.com%2Fcustom", 8),
		metasOf("metas, a malformed escape drops the parameter", "?schema=%zz&name=stable", 1, 5),
		{name: "metas of an empty catalog", target: "/catalogs/empty/api/v1/metas?schema=olm.package", status: 200, length: 0, want: metas},
		{name: "metas, HEAD", method: "HEAD", target: "/catalogs/test/api/v1/metas?schema=olm.package", status: 200, length: -1, want: metas},
		{name: "metas, a range is ignored", target: "/catalogs/test/api/v1/metas?schema=olm.package", header: map[string]string{"Range": "bytes=0-9"},
			status: 200, body: wantLines(t, 0, 4), length: int64(len(wantLines(t, 0, 4))), want: merge(metas, map[string]string{"Content-Range": absent})},
		{name: "metas, gzip", target: "/catalogs/test/api/v1/metas", header: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, body: all, length: anyLength, want: merge(metas, gzipped)},
		{name: "metas, gzip small: not compressed", target: "/catalogs/test/api/v1/metas?schema=olm.package", header: map[string]string{"Accept-Encoding": "gzip"},
			status: 200, body: wantLines(t, 0, 4), length: int64(len(wantLines(t, 0, 4))), want: metas},

		// Conditional metas requests.
		{name: "metas, not modified since", target: "/catalogs/test/api/v1/metas?schema=olm.package", header: map[string]string{"If-Modified-Since": future}, status: 304, length: 0, want: bare},
		{name: "metas, not modified since its own time", target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-Modified-Since": lastModified}, status: 304, length: 0, want: bare},
		metasOf("metas, modified since", "?schema=olm.package", 0, 4).with(map[string]string{"If-Modified-Since": past}),
		{name: "metas, a malformed If-Modified-Since: 500, then the body", target: "/catalogs/test/api/v1/metas?schema=olm.package", header: map[string]string{"If-Modified-Since": "yesterday"},
			status: 500, body: "500 Internal Server Error\n" + wantLines(t, 0, 4), length: int64(26 + len(wantLines(t, 0, 4))), want: merge(plainError, map[string]string{"Last-Modified": lastModified})},
		{name: "metas, If-None-Match *", target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-None-Match": "*"}, status: 304, length: 0, want: bare},
		{name: "metas, If-None-Match tags then *", target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-None-Match": `"a", W/"b" ,*`}, status: 304, length: 0, want: bare},
		metasOf("metas, If-None-Match a tag skips If-Modified-Since", "?schema=olm.package", 0, 4).with(map[string]string{"If-None-Match": `"x"`, "If-Modified-Since": future}),
		metasOf("metas, If-None-Match malformed before *", "?schema=olm.package", 0, 4).with(map[string]string{"If-None-Match": `x, *`}),
		{name: "metas, If-Match a tag", target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-Match": `"x"`}, status: 412, length: 0, want: bare},
		metasOf("metas, If-Match *", "?schema=olm.package", 0, 4).with(map[string]string{"If-Match": "*"}),
		metasOf("metas, If-Match * wins over If-Unmodified-Since", "?schema=olm.package", 0, 4).with(map[string]string{"If-Match": `"x", *`, "If-Unmodified-Since": past}),
		{name: "metas, If-Unmodified-Since past", target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-Unmodified-Since": past}, status: 412, length: 0, want: bare},
		metasOf("metas, If-Unmodified-Since future", "?schema=olm.package", 0, 4).with(map[string]string{"If-Unmodified-Since": future}),
		metasOf("metas, a malformed If-Unmodified-Since is ignored", "?schema=olm.package", 0, 4).with(map[string]string{"If-Unmodified-Since": "soon"}),

		// Refusals, and their order.
		{name: "metas, another parameter", target: "/catalogs/test/api/v1/metas?schema=olm.package&version=1", status: 400, body: "400 Bad Request\n", length: 16, want: plainError},
		{name: "metas, another parameter before an unknown catalog", target: "/catalogs/nope/api/v1/metas?foo", status: 400, body: "400 Bad Request\n", length: 16, want: plainError},
		{name: "metas, a parameter's case matters", target: "/catalogs/test/api/v1/metas?Schema=olm.package", status: 400, body: "400 Bad Request\n", length: 16, want: plainError},
		{name: "metas of an unknown catalog", target: "/catalogs/nope/api/v1/metas?schema=olm.package", status: 404, body: "404 Not Found\n", length: 14, want: plainError},
		{name: "root", target: "/", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "catalogs", target: "/catalogs/", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "a catalog's base", target: "/catalogs/test", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "api/v1", target: "/catalogs/test/api/v1", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "all with a trailing slash", target: "/catalogs/test/api/v1/all/", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "api/v2", target: "/catalogs/test/api/v2/all", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "POST all", method: "POST", target: "/catalogs/test/api/v1/all", status: 405, body: "Method Not Allowed\n", length: 19, want: plainError},
		{name: "DELETE of an unknown path: 404", method: "DELETE", target: "/nope", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{name: "OPTIONS metas", method: "OPTIONS", target: "/catalogs/test/api/v1/metas", status: 405, body: "Method Not Allowed\n", length: 19, want: plainError},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, url) })
	}
}

// with returns e with request headers.
func (e exchange) with(h map[string]string) exchange {
	e.header = h
	return e
}

// TestHandlerLargeMetasAnswersAreChunked: a metas answer over net/http's
// 2 KiB buffer goes without a length, as catalogd's io.Copy does; /all
// always has one.
func TestHandlerLargeMetasAnswersAreChunked(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 200 {
		fsys[fmt.Sprintf("p%03d/catalog.yaml", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "schema: olm.package\nname: p%03d\n", i)}
	}
	c, err := Load(t.Context(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	c.modTime = testModTime
	srv := httptest.NewServer(NewHandler(HandlerOptions{Catalogs: map[string]*Content{"big": c}}))
	defer srv.Close()
	n := int64(len(c.Bytes()))
	if n <= 2048 {
		t.Fatalf("the catalog has %d bytes: too few", n)
	}
	for _, tc := range []exchange{
		{target: "/catalogs/big/api/v1/metas", status: 200, body: string(c.Bytes()), length: -1, want: merge(metas, map[string]string{"Transfer-Encoding": absent})},
		{target: "/catalogs/big/api/v1/metas?schema=olm.package", status: 200, body: string(c.Bytes()), length: -1, want: metas},
		{target: "/catalogs/big/api/v1/all", status: 200, body: string(c.Bytes()), length: n, want: whole},
	} {
		t.Run(tc.target, func(t *testing.T) {
			tc.check(t, srv.URL)
			resp, _ := tc.do(t, srv.URL)
			if tc.length == -1 && (len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked") {
				t.Errorf("transfer encoding %q, want chunked", resp.TransferEncoding)
			}
		})
	}
}

func TestHandlerDisableMetas(t *testing.T) {
	url := testServer(t, HandlerOptions{DisableMetas: true})
	for _, tc := range []exchange{
		{target: "/catalogs/test/api/v1/metas?schema=olm.package", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{target: "/catalogs/test/api/v1/metas?foo", status: 404, body: "404 page not found\n", length: 19, want: plainError},
		{target: "/catalogs/test/api/v1/all", status: 200, body: wantLines(t, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9), length: 1605, want: whole},
	} {
		t.Run(tc.target, func(t *testing.T) { tc.check(t, url) })
	}
}

// TestHandlerServesEachCatalogByName: two catalogs, each its own answers.
func TestHandlerServesEachCatalogByName(t *testing.T) {
	url := testServer(t, HandlerOptions{})
	exchange{target: "/catalogs/empty/api/v1/metas", status: 200, length: 0, want: metas}.check(t, url)
	exchange{target: "/catalogs/test/api/v1/metas?name=b", status: 200, body: wantLines(t, 4), length: int64(len(wantLines(t, 4))), want: metas}.check(t, url)
}

func TestHandlerLog(t *testing.T) {
	var log strings.Builder
	url := testServer(t, HandlerOptions{Log: &log})
	exchange{target: "/catalogs/test/api/v1/metas?schema=olm.package", status: 200, body: wantLines(t, 0, 4), length: int64(len(wantLines(t, 0, 4))), want: metas}.check(t, url)
	exchange{method: "POST", target: "/x", status: 404, body: "404 page not found\n", length: 19}.check(t, url)
	want := "GET /catalogs/test/api/v1/metas?schema=olm.package HTTP/1.1 200 " + strconv.Itoa(len(wantLines(t, 0, 4))) + "\n" +
		"POST /x HTTP/1.1 404 19\n"
	if log.String() != want {
		t.Errorf("log:\n%s\nwant:\n%s", log.String(), want)
	}
}

// TestListHasStar: the entity-tag lists of If-Match and If-None-Match.
func TestListHasStar(t *testing.T) {
	for v, want := range map[string]bool{
		"":                    false,
		"*":                   true,
		" * ":                 true,
		`"a"`:                 false,
		`"a",*`:               true,
		`W/"a" , "b", *`:      true,
		`a, *`:                false, // reading stops at the malformed tag
		`"a" "b" *`:           true,  // tags need no commas between them
		`"unterminated, *`:    false,
		`W/x, *`:              false,
		",,,*":                true,
		"\"\x80\", *":         true,
		"\"\x7f\", *":         false,
		"\"bad\x01quote\", *": false,
	} {
		if got := listHasStar(v); got != want {
			t.Errorf("listHasStar(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestPreconditionsTruncateToSeconds(t *testing.T) {
	c := loadTest(t)
	c.modTime = testModTime.Add(500 * time.Millisecond)
	srv := httptest.NewServer(NewHandler(HandlerOptions{Catalogs: map[string]*Content{"test": c}}))
	defer srv.Close()
	// Last-Modified is in seconds: asking with it is not modified.
	exchange{target: "/catalogs/test/api/v1/metas", header: map[string]string{"If-Modified-Since": lastModified}, status: 304, length: 0, want: bare}.check(t, srv.URL)
	exchange{target: "/catalogs/test/api/v1/all", header: map[string]string{"If-Modified-Since": lastModified}, status: 304, length: 0, want: bare}.check(t, srv.URL)
}
