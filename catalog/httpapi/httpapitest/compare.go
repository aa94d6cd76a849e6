package httpapitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/chartpilot/chartpilot/catalog/httpapi"
)

// Endpoint is one server of the API.
type Endpoint struct {
	// URL is the server's root, scheme://host:port: catalogs are below
	// httpapi.PathPrefix.
	URL string
	// Client sends the requests; nil is http.DefaultClient's transport. An
	// *http.Transport is used as a copy that leaves compression to the
	// queries, so that what the server answers is what is compared.
	Client *http.Client
	// IgnoreHeaders are headers that the way to this server adds (a proxy's),
	// left out of the comparison.
	IgnoreHeaders []string
}

// Query is one request.
type Query struct {
	// Method is GET when empty.
	Method string
	// Path is below the catalog's base ("api/v1/metas?schema=olm.package"),
	// or, starting with "/", the whole path and query.
	Path string
	// Header is sent as is: Accept-Encoding, Range, If-Modified-Since...
	Header http.Header
}

// String names the query in reports.
func (q Query) String() string {
	s := cmpOr(q.Method, http.MethodGet) + " " + q.Path
	keys := make([]string, 0, len(q.Header))
	for k := range q.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s += fmt.Sprintf(" [%s: %s]", k, strings.Join(q.Header[k], ", "))
	}
	return s
}

// Difference is one way two answers to a query differ.
type Difference struct {
	Query Query
	// What differs: "status", "body", or a header's name.
	What string
	// Ours and Theirs are the two values, shortened.
	Ours, Theirs string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s: ours %s, theirs %s", d.Query, d.What, d.Ours, d.Theirs)
}

// Compare sends each query to both servers for catalog and reports every
// difference as a test error.
func Compare(t testing.TB, ours, theirs Endpoint, catalog string, queries []Query) {
	t.Helper()
	diffs, err := Diff(t.Context(), ours, theirs, catalog, queries)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s", d)
	}
	t.Logf("%d queries of catalog %q compared: %d differences", len(queries), catalog, len(diffs))
	// Two servers that both answer nothing agree on everything: the whole
	// catalog must have been served.
	all := Query{Path: httpapi.AllPath}
	if a, err := fetch(t.Context(), ours.client(), ours.URL, catalog, all); err != nil || a.status != http.StatusOK || len(a.body) == 0 {
		t.Errorf("%s of catalog %q: status %d, %d bytes (err %v): the comparison saw no content", all, catalog, a.status, len(a.body), err)
	}
}

// Diff sends each query to both servers for catalog and returns the
// differences; an error is a request that got no answer.
func Diff(ctx context.Context, ours, theirs Endpoint, catalog string, queries []Query) ([]Difference, error) {
	oc, tc := ours.client(), theirs.client()
	var diffs []Difference
	for _, q := range queries {
		a, err := fetch(ctx, oc, ours.URL, catalog, q)
		if err != nil {
			return nil, fmt.Errorf("ours: %s: %w", q, err)
		}
		b, err := fetch(ctx, tc, theirs.URL, catalog, q)
		if err != nil {
			return nil, fmt.Errorf("theirs: %s: %w", q, err)
		}
		for _, d := range compareAnswers(a, b, ours.IgnoreHeaders, theirs.IgnoreHeaders) {
			d.Query = q
			diffs = append(diffs, d)
		}
	}
	return diffs, nil
}

// client is e's client, one that neither asks for compression nor follows
// redirects on its own.
func (e Endpoint) client() *http.Client {
	c := http.Client{}
	if e.Client != nil {
		c = *e.Client
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if tr, ok := rt.(*http.Transport); ok {
		tr = tr.Clone()
		tr.DisableCompression = true
		rt = tr
	}
	c.Transport = rt
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// answer is what a server answered, its body decompressed.
type answer struct {
	status int
	header http.Header
	// chunked: the answer had no length.
	chunked bool
	body    []byte
}

func fetch(ctx context.Context, c *http.Client, root, catalog string, q Query) (answer, error) {
	path := q.Path
	if !strings.HasPrefix(path, "/") {
		path = httpapi.PathPrefix + catalog + "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, cmpOr(q.Method, http.MethodGet), strings.TrimSuffix(root, "/")+path, nil)
	if err != nil {
		return answer{}, err
	}
	for k, vs := range q.Header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	if body, err = Decode(resp.Header.Get("Content-Encoding"), body); err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, header: resp.Header, chunked: resp.ContentLength == -1, body: body}
	a.fixBoundary()
	return a, nil
}

// boundaryPlaceholder replaces a multipart answer's boundary.
const boundaryPlaceholder = "BOUNDARY"

// fixBoundary replaces the boundary of a multipart/byteranges answer,
// which net/http draws at random, in its Content-Type and body.
func (a *answer) fixBoundary() {
	ct := a.header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "multipart/byteranges" || params["boundary"] == "" {
		return
	}
	b := params["boundary"]
	a.header.Set("Content-Type", strings.Replace(ct, b, boundaryPlaceholder, 1))
	a.body = bytes.ReplaceAll(a.body, []byte("--"+b), []byte("--"+boundaryPlaceholder))
}

// compareAnswers lists how a and b differ.
func compareAnswers(a, b answer, ignoreA, ignoreB []string) []Difference {
	var diffs []Difference
	if a.status != b.status {
		diffs = append(diffs, Difference{What: "status", Ours: fmt.Sprint(a.status), Theirs: fmt.Sprint(b.status)})
	}
	if d, ok := compareBodies(a.body, b.body); !ok {
		diffs = append(diffs, d)
	}
	compressed := a.header.Get("Content-Encoding") != "" && b.header.Get("Content-Encoding") != ""
	if !compressed && a.chunked != b.chunked {
		diffs = append(diffs, Difference{What: "length", Ours: lengthString(a.chunked), Theirs: lengthString(b.chunked)})
	}
	for _, k := range headerNames(a.header, b.header, ignoreA, ignoreB) {
		switch {
		case k == "Date":
		case k == "Content-Length" && compressed:
		case k == "Last-Modified":
			if d, ok := compareDates(a.header.Values(k), b.header.Values(k)); !ok {
				diffs = append(diffs, d)
			}
		default:
			if av, bv := a.header.Values(k), b.header.Values(k); !slices.Equal(av, bv) {
				diffs = append(diffs, Difference{What: k, Ours: headerString(av), Theirs: headerString(bv)})
			}
		}
	}
	return diffs
}

// headerNames is every header of a or b, sorted, less the ignored.
func headerNames(a, b http.Header, ignoreA, ignoreB []string) []string {
	var names []string
	for _, h := range []http.Header{a, b} {
		for k := range h {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return slices.DeleteFunc(names, func(k string) bool {
		ignored := func(s string) bool { return strings.EqualFold(s, k) }
		return slices.ContainsFunc(ignoreA, ignored) || slices.ContainsFunc(ignoreB, ignored)
	})
}

// compareDates: both or neither, each an HTTP date.
func compareDates(a, b []string) (Difference, bool) {
	valid := func(vs []string) bool {
		if len(vs) != 1 {
			return false
		}
		_, err := http.ParseTime(vs[0])
		return err == nil
	}
	if len(a) == 0 && len(b) == 0 || valid(a) && valid(b) {
		return Difference{}, true
	}
	return Difference{What: "Last-Modified", Ours: headerString(a), Theirs: headerString(b)}, false
}

// compareBodies compares byte for byte and, when they differ, says where:
// the first line that differs, or that the lines are the same in another
// order.
func compareBodies(a, b []byte) (Difference, bool) {
	if bytes.Equal(a, b) {
		return Difference{}, true
	}
	la, lb := bytes.SplitAfter(a, []byte("\n")), bytes.SplitAfter(b, []byte("\n"))
	d := Difference{What: "body"}
	if sameLines(la, lb) {
		d.What = "body order (the same lines in another order)"
	}
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			d.What += fmt.Sprintf(" at line %d of %d/%d", i+1, len(la), len(lb))
			d.Ours, d.Theirs = quote(x), quote(y)
			break
		}
	}
	return d, false
}

// sameLines reports whether a and b hold the same lines, counted.
func sameLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := toStrings(a), toStrings(b)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(sa, sb)
}

func toStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// quote shows a value, shortened.
func quote(b []byte) string {
	const max = 160
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func headerString(vs []string) string {
	if len(vs) == 0 {
		return "(none)"
	}
	return quote([]byte(strings.Join(vs, ", ")))
}

func lengthString(chunked bool) string {
	if chunked {
		return "none (chunked)"
	}
	return "Content-Length"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Decode undoes a Content-Encoding catalogd sends (gzip, zstd): answers
// compare by what they say, whatever the compressor's version wrote.
func Decode(encoding string, body []byte) ([]byte, error) {
	var r io.Reader
	switch encoding {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("zstd body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("a body in %q, which catalogd never sends", encoding)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s body: %w", encoding, err)
	}
	return out, nil
}
