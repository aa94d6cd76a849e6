package httpapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Far past and far future dates for conditional requests: the answers do
// not depend on when either server stored the catalog.
const (
	pastDate   = "Mon, 02 Jan 2006 15:04:05 GMT"
	futureDate = "Fri, 01 Jan 2100 00:00:00 GMT"
)

// maxPerKind bounds the names and combinations StandardQueries picks from a
// large catalog: evenly spread, first and last included.
const maxPerKind = 40

// StandardQueries are the queries that tell two servers of a catalog apart,
// made from the catalog's /api/v1/all stream: the whole stream (HEAD,
// ranges, compression, preconditions); the metas endpoint with no
// parameter, each schema, each package, names, and each pairing and triple
// that selects something or nothing; its refusals (another parameter, an
// unknown catalog); and paths and methods the API does not have. A catalog
// without the metas endpoint answers those with 404, which is compared too.
func StandardQueries(all []byte) ([]Query, error) {
	metas, err := parseStream(all)
	if err != nil {
		return nil, err
	}
	q := wholeStreamQueries()
	q = append(q, metasQueries(metas)...)
	q = append(q, refusalQueries()...)
	// A package's name is often a name too: ask once.
	seen := map[string]bool{}
	return slices.DeleteFunc(q, func(q Query) bool {
		dup := seen[q.String()]
		seen[q.String()] = true
		return dup
	}), nil
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func wholeStreamQueries() []Query {
	const all = "api/v1/all"
	return []Query{
		{Path: all},
		{Path: all, Method: http.MethodHead},
		{Path: all, Header: header("Accept-Encoding", "gzip")},
		{Path: all, Header: header("Accept-Encoding", "gzip, deflate, br, zstd")},
		{Path: all, Method: http.MethodHead, Header: header("Accept-Encoding", "gzip")},
		{Path: all, Header: header("Range", "bytes=0-99")},
		{Path: all, Header: header("Range", "bytes=-100")},
		{Path: all, Header: header("Range", "bytes=0-0,10-19")},
		{Path: all, Header: header("Range", "bytes=999999999-")},
		{Path: all, Header: header("Range", "bytes=0-99", "Accept-Encoding", "gzip")},
		{Path: all, Header: header("If-Modified-Since", futureDate)},
		{Path: all, Header: header("If-Modified-Since", pastDate)},
		{Path: all, Header: header("If-Modified-Since", "not a date")},
		{Path: all, Header: header("If-None-Match", "*")},
		{Path: all, Header: header("If-None-Match", `"x"`)},
		{Path: all, Header: header("If-Match", `"x"`)},
		{Path: all, Header: header("If-Match", "*")},
		{Path: all, Header: header("If-Unmodified-Since", pastDate)},
		{Path: all, Header: header("If-Unmodified-Since", futureDate)},
		{Path: all, Header: header("If-Range", pastDate, "Range", "bytes=0-9")},
		{Path: all + "?schema=olm.package"},
	}
}

// meta is what the metas endpoint selects on.
type meta struct{ schema, pkg, name string }

// parseStream reads the schema, package and name of every line as
// declcfg.Meta does: keys compared case-insensitively.
func parseStream(all []byte) ([]meta, error) {
	var out []meta
	for i, l := range strings.Split(strings.TrimSuffix(string(all), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return nil, fmt.Errorf("line %d of the stream: %w", i+1, err)
		}
		var x meta
		for k, v := range m {
			s, _ := v.(string)
			switch strings.ToLower(k) {
			case "schema":
				x.schema = s
			case "package":
				x.pkg = s
			case "name":
				x.name = s
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// metasPath is the metas endpoint with parameters in the order given.
func metasPath(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+"="+url.QueryEscape(kv[i+1]))
	}
	if len(parts) == 0 {
		return "api/v1/metas"
	}
	return "api/v1/metas?" + strings.Join(parts, "&")
}

func metasQueries(metas []meta) []Query {
	var schemas, pkgs, names, pairs, triples orderedSet
	for _, m := range metas {
		schemas.add(m.schema)
		pkgs.add(m.pkg)
		names.add(m.name)
		if m.schema != "" && m.pkg != "" {
			pairs.add(metasPath("schema", m.schema, "package", m.pkg))
		}
		if m.pkg != "" && m.name != "" {
			pairs.add(metasPath("package", m.pkg, "name", m.name))
		}
		if m.schema != "" && m.name != "" {
			pairs.add(metasPath("schema", m.schema, "name", m.name))
		}
		if m.schema != "" && m.pkg != "" && m.name != "" {
			triples.add(metasPath("schema", m.schema, "package", m.pkg, "name", m.name))
		}
	}
	qs := []Query{
		{Path: metasPath()},
		{Path: metasPath(), Method: http.MethodHead},
		{Path: metasPath(), Header: header("Accept-Encoding", "gzip")},
		{Path: metasPath(), Header: header("Range", "bytes=0-9")},
		{Path: "api/v1/metas?schema=&package=&name="},
		{Path: "api/v1/metas?schema"},
		{Path: metasPath("schema", "no.such.schema")},
		{Path: metasPath("package", "no-such-package")},
		{Path: metasPath("name", "no-such-name")},
		{Path: "api/v1/metas?schema=%zz"},
	}
	for _, s := range schemas.list {
		qs = append(qs,
			Query{Path: metasPath("schema", s)},
			Query{Path: metasPath("schema", s), Method: http.MethodHead},
			Query{Path: metasPath("schema", s), Header: header("Accept-Encoding", "gzip")},
			Query{Path: metasPath("schema", s, "schema", "no.such.schema")},
		)
	}
	for _, p := range spread(pkgs.list) {
		qs = append(qs, Query{Path: metasPath("package", p)}, Query{Path: metasPath("name", p)})
	}
	for _, n := range spread(names.list) {
		qs = append(qs, Query{Path: metasPath("name", n)})
	}
	for _, p := range spread(pairs.list) {
		qs = append(qs, Query{Path: p})
	}
	for _, p := range spread(triples.list) {
		qs = append(qs, Query{Path: p})
	}
	if p, n := pkgs.list, names.list; len(p) > 0 && len(n) > 0 {
		// A package and a name that may not go together.
		qs = append(qs, Query{Path: metasPath("schema", "olm.bundle", "package", p[0], "name", n[len(n)-1])})
	}
	first := metasPath("schema", "olm.package")
	return append(qs,
		Query{Path: first, Header: header("If-Modified-Since", futureDate)},
		Query{Path: first, Header: header("If-Modified-Since", pastDate)},
		Query{Path: first, Header: header("If-Modified-Since", "not a date")},
		Query{Path: first, Header: header("If-None-Match", "*")},
		Query{Path: first, Header: header("If-None-Match", `"x", *`)},
		Query{Path: first, Header: header("If-None-Match", `"x"`, "If-Modified-Since", futureDate)},
		Query{Path: first, Header: header("If-Match", `"x"`)},
		Query{Path: first, Header: header("If-Match", "*", "If-Unmodified-Since", pastDate)},
		Query{Path: first, Header: header("If-Unmodified-Since", pastDate)},
		Query{Path: first, Header: header("If-Unmodified-Since", futureDate)},
	)
}

func refusalQueries() []Query {
	const unknown = "/catalogs/no-such-catalog/api/v1/"
	return []Query{
		{Path: metasPath("schema", "olm.package", "version", "1")},
		{Path: "api/v1/metas?Schema=olm.package"},
		{Path: unknown + "all"},
		{Path: unknown + "metas?schema=olm.package"},
		{Path: unknown + "metas?foo=bar"},
		{Path: "/"},
		{Path: "/catalogs/"},
		{Path: "/catalogs"},
		{Path: "api/v1"},
		{Path: "api/v1/all/"},
		{Path: "api/v2/all"},
		{Path: "/catalogs//api/v1/all"},
		{Path: "/catalogs/x/../no-such-catalog/api/v1/all"},
		{Path: "api/v1/all", Method: http.MethodPost},
		{Path: "api/v1/metas", Method: http.MethodPut},
		{Path: "/nothing", Method: http.MethodDelete},
		{Path: "api/v1/all", Method: http.MethodOptions},
	}
}

// orderedSet keeps the non-empty values it is given, once, in order.
type orderedSet struct {
	list []string
	seen map[string]bool
}

func (s *orderedSet) add(v string) {
	if v == "" || s.seen[v] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[v] = true
	s.list = append(s.list, v)
}

// spread picks at most maxPerKind of s, evenly, keeping the first and last.
func spread(s []string) []string {
	if len(s) <= maxPerKind {
		return s
	}
	out := make([]string, 0, maxPerKind)
	for i := range maxPerKind {
		out = append(out, s[i*(len(s)-1)/(maxPerKind-1)])
	}
	return out
}
