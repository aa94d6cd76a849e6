package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// okStatuses are every status the handler may answer: catalogd's, and
// net/http's redirects of unclean paths.
var okStatuses = []int{http.StatusOK, http.StatusPartialContent, http.StatusMovedPermanently, http.StatusTemporaryRedirect,
	http.StatusPermanentRedirect, http.StatusNotModified, http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed,
	http.StatusPreconditionFailed, http.StatusRequestedRangeNotSatisfiable, http.StatusInternalServerError}

// FuzzHandler sends arbitrary requests (method, path and query, and the
// headers that change an answer) to the handler serving the test catalog:
// it never panics; methods but GET and HEAD get no content (405 on all
// and metas, 404 or a redirect elsewhere, as catalogd); the status is one
// catalogd answers; a HEAD answered 2xx has no body; an answer is never larger than the
// catalog plus a bound linear in the request; and what it serves is the
// catalog's: /all whole, the metas endpoint whole lines in stream order, a
// range the bytes it names.
func FuzzHandler(f *testing.F) {
	all, metas := PathPrefix+"test/"+AllPath, PathPrefix+"test/"+MetasPath
	for _, seed := range []struct{ method, target, encoding, noneMatch, modifiedSince, rng string }{
		{method: "GET", target: all},
		{method: "GET", target: all, encoding: "gzip"},
		{method: "HEAD", target: all},
		{method: "POST", target: all},
		{method: "DELETE", target: "/nothing"},
		{method: "GET", target: all, encoding: "gzip, deflate, br, zstd"},
		{method: "GET", target: all, rng: "bytes=0-9,20-29"},
		{method: "GET", target: all, rng: "bytes=5-"},
		{method: "GET", target: all, rng: "bytes=999999-"},
		{method: "GET", target: metas},
		{method: "GET", target: metas + "?schema=olm.package"},
		{method: "GET", target: metas + "?package=a&name=stable", encoding: "gzip"},
		{method: "GET", target: metas + "?nope=1"},
		{method: "GET", target: metas, noneMatch: "*"},
		{method: "GET", target: metas, modifiedSince: "not a date"},
		{method: "GET", target: metas, modifiedSince: "Wed, 04 Mar 2026 05:06:07 GMT"},
		{method: "GET", target: PathPrefix + "missing/" + AllPath},
		{method: "GET", target: PathPrefix + "test/../test/" + AllPath},
		{method: "GET", target: "/%zz"},
	} {
		f.Add(seed.method, seed.target, seed.encoding, seed.noneMatch, seed.modifiedSince, seed.rng)
	}
	c := loadTest(f)
	h := NewHandler(HandlerOptions{Catalogs: map[string]*Content{"test": c}})
	f.Fuzz(func(t *testing.T, method, target, encoding, noneMatch, modifiedSince, rng string) {
		req, err := http.NewRequest(method, "http://catalogd.invalid/"+strings.TrimPrefix(target, "/"), nil)
		if err != nil {
			return // no request a client could send
		}
		method = req.Method // "" is GET
		for k, v := range map[string]string{"Accept-Encoding": encoding, "If-None-Match": noneMatch, "If-Modified-Since": modifiedSince, "Range": rng} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.Result()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body := decoded(t, resp.Header.Get("Content-Encoding"), raw)
		what := fmt.Sprintf("%s %s (Range %q): %d", method, req.URL.RequestURI(), rng, resp.StatusCode)
		switch {
		case method != http.MethodGet && method != http.MethodHead && (req.URL.Path == all || req.URL.Path == metas) && resp.StatusCode != http.StatusMethodNotAllowed:
			t.Errorf("%s, want 405", what)
		case method != http.MethodGet && method != http.MethodHead && resp.StatusCode != http.StatusMethodNotAllowed &&
			resp.StatusCode != http.StatusNotFound && resp.StatusCode/100 != 3:
			t.Errorf("%s, want 405, 404 or a redirect", what)
		case !slices.Contains(okStatuses, resp.StatusCode):
			t.Errorf("%s: a status catalogd never answers", what)
		case method == http.MethodHead && resp.StatusCode/100 == 2 && len(body) > 0:
			// (net/http's server drops what an error writes to a HEAD)
			t.Errorf("%s: a body of %d bytes", what, len(body))
		case len(body) > len(c.Bytes())+1024+256*len(rng):
			t.Errorf("%s: %d bytes for a catalog of %d", what, len(body), len(c.Bytes()))
		}
		if method == http.MethodGet {
			checkServed(t, what, req.URL.Path, resp, body, c.Bytes())
		}
	})
}

// decoded is the answer's body, gzip undone.
// checkServed checks that a successful GET served the catalog's data.
func checkServed(t *testing.T, what, path string, resp *http.Response, body, data []byte) {
	t.Helper()
	switch {
	case resp.StatusCode == http.StatusOK && path == PathPrefix+"test/"+AllPath:
		if !bytes.Equal(body, data) {
			t.Errorf("%s: /all answered %d bytes that are not the catalog's %d", what, len(body), len(data))
		}
	case resp.StatusCode == http.StatusOK && path == PathPrefix+"test/"+MetasPath:
		rest := data
		for _, l := range bytes.SplitAfter(body, []byte("\n")) {
			i := bytes.Index(rest, l)
			if len(l) > 0 && (i < 0 || i > 0 && rest[i-1] != '\n') {
				t.Errorf("%s: %q is no line of the catalog after the lines before it", what, l)
				return
			}
			rest = rest[i+len(l):]
		}
	case resp.StatusCode == http.StatusPartialContent && !strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/"):
		var from, to, size int
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &from, &to, &size); err != nil || size != len(data) ||
			from < 0 || to >= len(data) || !bytes.Equal(body, data[from:to+1]) {
			t.Errorf("%s: Content-Range %q does not name the %d bytes answered", what, resp.Header.Get("Content-Range"), len(body))
		}
	}
}
