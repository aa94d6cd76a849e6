package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/klauspost/compress/gzhttp"
)

// The URL layout and media type: catalogd's, which clients build their URLs
// from (a ClusterCatalog's status.urls.base is PathPrefix+NAME on its
// service).
const (
	// PathPrefix is the path under which each catalog is served by name.
	PathPrefix = "/catalogs/"
	// AllPath, below a catalog's base, answers the whole catalog.
	AllPath = "api/v1/all"
	// MetasPath, below a catalog's base, answers the metas a query selects.
	MetasPath = "api/v1/metas"
	// ContentType is the media type of both: JSON Lines.
	ContentType = "application/jsonl"
)

// The metas endpoint's query parameters; any other is refused.
const (
	ParamSchema  = "schema"
	ParamPackage = "package"
	ParamName    = "name"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Catalogs are the catalogs served, by name (a ClusterCatalog's name).
	// The map is copied; the contents are shared and never changed.
	Catalogs map[string]*Content
	// DisableMetas answers the metas endpoint with 404 as catalogd v1.2.0
	// does without its APIV1MetasHandler feature gate, which is alpha and
	// off by default.
	DisableMetas bool
	// Log, when set, receives a line per request: method, URI, protocol,
	// status and body bytes, as catalogd logs them.
	Log io.Writer
}

// NewHandler answers catalogd's HTTP API for the catalogs of opts.
func NewHandler(opts HandlerOptions) http.Handler {
	h := &handler{catalogs: maps.Clone(opts.Catalogs)}
	mux := http.NewServeMux()
	mux.HandleFunc(PathPrefix+"{catalog}/"+AllPath, getOrHead(h.all))
	if !opts.DisableMetas {
		mux.HandleFunc(PathPrefix+"{catalog}/"+MetasPath, getOrHead(h.metas))
	}
	// catalogd's compression middleware, from the same library and with
	// its defaults: zstd where the client takes it, else gzip.
	var next http.Handler = gzhttp.GzipHandler(mux)
	if opts.Log != nil {
		next = logRequests(next, opts.Log)
	}
	return next
}

type handler struct {
	catalogs map[string]*Content
}

// getOrHead refuses other methods on a route, as catalogd v1.11 does: a
// POST to a catalog's content is 405, to a path that does not exist 404.
func getOrHead(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		next(w, r)
	}
}

// httpError answers code with catalogd's body: "404 Not Found".
func httpError(w http.ResponseWriter, code int) {
	http.Error(w, fmt.Sprintf("%d %s", code, http.StatusText(code)), code)
}

// all answers the whole stream with net/http's ServeContent, as catalogd
// does for the file it stored: ranges, preconditions and HEAD included.
func (h *handler) all(w http.ResponseWriter, r *http.Request) {
	c, ok := h.catalogs[r.PathValue("catalog")]
	if !ok {
		httpError(w, http.StatusNotFound)
		return
	}
	w.Header().Add("Content-Type", ContentType)
	http.ServeContent(w, r, "", c.modTime, bytes.NewReader(c.data))
}

// metas answers the metas a query selects, in stream order.
func (h *handler) metas(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for p := range q {
		if p != ParamSchema && p != ParamPackage && p != ParamName {
			httpError(w, http.StatusBadRequest)
			return
		}
	}
	c, ok := h.catalogs[r.PathValue("catalog")]
	if !ok {
		httpError(w, http.StatusNotFound)
		return
	}
	w.Header().Set("Last-Modified", c.modTime.UTC().Format(http.TimeFormat))
	if preconditions(w, r, c.modTime) {
		return
	}
	w.Header().Add("Content-Type", ContentType)
	if r.Method == http.MethodHead {
		return
	}
	schema, pkg, name := q.Get(ParamSchema), q.Get(ParamPackage), q.Get(ParamName)
	if schema == "" && pkg == "" && name == "" {
		_, _ = w.Write(c.data) // a failed write is a client gone
		return
	}
	for _, l := range c.Query(schema, pkg, name) {
		if _, err := w.Write(l); err != nil {
			return
		}
	}
}

// preconditions evaluates a metas request's conditional headers as
// catalogd v1.2.0 does (RFC 7232 section 6 without an ETag) and reports
// whether the answer is complete: 412 or 304. An If-Modified-Since that is
// no HTTP date writes a 500 and lets the body follow, as catalogd's does.
func preconditions(w http.ResponseWriter, r *http.Request, modTime time.Time) bool {
	cond := ifMatch(r.Header.Get("If-Match"))
	if cond == condNone {
		cond = ifUnmodifiedSince(r.Header.Get("If-Unmodified-Since"), modTime)
	}
	if cond == condFalse {
		w.WriteHeader(http.StatusPreconditionFailed)
		return true
	}
	switch ifNoneMatch(r.Header.Get("If-None-Match")) {
	case condFalse:
		notModified(w)
		return true
	case condNone:
		ims := r.Header.Get("If-Modified-Since")
		if ims == "" {
			return false
		}
		t, err := http.ParseTime(ims)
		if err != nil {
			httpError(w, http.StatusInternalServerError)
			return false
		}
		if !modTime.Truncate(time.Second).After(t) {
			notModified(w)
			return true
		}
	}
	return false
}

// cond is the outcome of one precondition.
type cond int

const (
	condNone cond = iota
	condTrue
	condFalse
)

// ifMatch: with no ETag to match, only "*" holds.
func ifMatch(v string) cond {
	switch {
	case v == "":
		return condNone
	case listHasStar(v):
		return condTrue
	}
	return condFalse
}

// ifNoneMatch: "*" matches any representation, so it fails; a list of
// tags never matches.
func ifNoneMatch(v string) cond {
	switch {
	case v == "":
		return condNone
	case listHasStar(v):
		return condFalse
	}
	return condTrue
}

func ifUnmodifiedSince(v string, modTime time.Time) cond {
	if v == "" {
		return condNone
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return condNone
	}
	if modTime.Truncate(time.Second).After(t) {
		return condFalse
	}
	return condTrue
}

// listHasStar reports whether a list of entity tags holds "*" before its
// first malformed element, where reading it stops.
func listHasStar(v string) bool {
	for {
		v = textproto.TrimString(v)
		switch {
		case v == "":
			return false
		case v[0] == ',':
			v = v[1:]
		case v[0] == '*':
			return true
		default:
			n := entityTagLen(v)
			if n == 0 {
				return false
			}
			v = v[n:]
		}
	}
}

// entityTagLen is the length of the entity tag (W/"..." or "...") that v
// starts with, 0 when it starts with none.
func entityTagLen(v string) int {
	start := 0
	if strings.HasPrefix(v, "W/") {
		start = 2
	}
	if len(v) < start+2 || v[start] != '"' {
		return 0
	}
	for i := start + 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			return i + 1
		case c == 0x21 || c >= 0x23 && c <= 0x7e || c >= 0x80:
		default:
			return 0
		}
	}
	return 0
}

// notModified answers 304 without the headers that describe a body.
func notModified(w http.ResponseWriter) {
	h := w.Header()
	h.Del("Content-Type")
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	w.WriteHeader(http.StatusNotModified)
}

// logRequests writes a line per request to log.
func logRequests(next http.Handler, log io.Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		fmt.Fprintf(log, "%s %s %s %d %d\n", r.Method, r.URL.RequestURI(), r.Proto, rec.status, rec.size)
	})
}

// recorder notes a response's status and size.
type recorder struct {
	http.ResponseWriter
	status      int
	size        int64
	wroteHeader bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	n, err := r.ResponseWriter.Write(b)
	r.size += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
