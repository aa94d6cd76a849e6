package httpapi

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// testCatalog is testdata/catalog: packages a (YAML) and b (a JSON stream,
// with olm.deprecations), z/other.yaml with a meta of another schema named
// "a" and a meta without a schema, and ignored.yaml, which .indexignore
// leaves out. Its stream, testdata/all.jsonl, was checked by hand against
// what catalogd stores: files in path order, keys sorted, compact JSON, no
// HTML escaping, numbers as float64, one meta a line:
//
//	0 olm.package a          5 olm.channel stable (b)
//	1 olm.channel stable (a) 6 olm.bundle b.v2.0.0
//	2 olm.bundle a.v1.0.0    7 olm.deprecations (b)
//	3 olm.bundle a.v1.1.0    8 example.com/custom a
//	4 olm.package b          9 no schema: orphan (a)
const testCatalog = "testdata/catalog"

// testModTime is the Last-Modified tests give the test catalog.
var testModTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// loadTest loads the test catalog with testModTime.
func loadTest(t testing.TB) *Content {
	t.Helper()
	c, err := Load(t.Context(), os.DirFS(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	c.modTime = testModTime
	return c
}

// wantLines are lines of testdata/all.jsonl by number, joined.
func wantLines(t testing.TB, nums ...int) string {
	t.Helper()
	all, err := os.ReadFile("testdata/all.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(all), "\n")
	var b strings.Builder
	for _, n := range nums {
		b.WriteString(lines[n])
	}
	return b.String()
}

func TestLoadStreamsLikeCatalogd(t *testing.T) {
	c := loadTest(t)
	want, err := os.ReadFile("testdata/all.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.Bytes(), want) {
		t.Errorf("stream:\n%s\nwant:\n%s", c.Bytes(), want)
	}
	if c.Len() != 10 {
		t.Errorf("%d metas, want 10", c.Len())
	}
	if cap(c.Bytes()) != len(c.Bytes()) {
		t.Errorf("stream keeps %d bytes for %d", cap(c.Bytes()), len(c.Bytes()))
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		// want are parts of the error.
		want []string
	}{
		{
			name: "a file that is not YAML or JSON",
			fsys: fstest.MapFS{"p/catalog.yaml": {Data: []byte("schema: olm.package\nname: [\n")}},
			want: []string{"loading catalog", "p/catalog.yaml"},
		},
		{
			name: "keys that differ only in case",
			fsys: fstest.MapFS{"p/catalog.json": {Data: []byte(`{"schema":"olm.package","Schema":"x","name":"p"}`)}},
			want: []string{"p/catalog.json", `duplicate keys for key "schema"`},
		},
		{
			name: "a schema that is not a string",
			fsys: fstest.MapFS{"p/catalog.json": {Data: []byte(`{"schema":1,"name":"p"}`)}},
			want: []string{"p/catalog.json", `expected value for key "schema" to be a string`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(t.Context(), tc.fsys)
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestLoadAcceptsWhatCatalogdAccepts: catalogd stores any meta stream,
// valid FBC or not, and so does Load; an empty catalog is an empty stream.
func TestLoadAcceptsWhatCatalogdAccepts(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"empty":                   {},
		"a bundle of no package":  {"x.yaml": {Data: []byte("schema: olm.bundle\nname: lost\npackage: nowhere\n")}},
		"case-insensitive keys":   {"x.json": {Data: []byte(`{"Schema":"olm.package","NAME":"p"}`)}},
		"a file of any extension": {"README.md": {Data: []byte("schema: olm.package\nname: readme\n")}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Load(t.Context(), fsys); err != nil {
				t.Fatal(err)
			}
		})
	}
	c, err := Load(t.Context(), fstest.MapFS{"x.json": {Data: []byte(`{"Schema":"olm.package","NAME":"p"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Query("olm.package", "", "p"); len(got) != 1 || string(got[0]) != `{"NAME":"p","Schema":"olm.package"}`+"\n" {
		t.Errorf("case-insensitive keys index as schema and name: %q", got)
	}
}

func TestQuery(t *testing.T) {
	c := loadTest(t)
	for _, tc := range []struct {
		schema, pkg, name string
		want              []int
	}{
		// Every meta with a schema: not line 9.
		{want: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{schema: "olm.package", want: []int{0, 4}},
		{schema: "olm.channel", want: []int{1, 5}},
		{schema: "olm.deprecations", want: []int{7}},
		{schema: "nope"},
		// An olm.package meta has no package field; line 9 has no schema.
		{pkg: "a", want: []int{1, 2, 3}},
		{pkg: "nope"},
		{name: "a", want: []int{0, 8}},
		{name: "stable", want: []int{1, 5}},
		{name: "orphan"},
		{schema: "olm.channel", pkg: "b", want: []int{5}},
		{schema: "olm.package", name: "a", want: []int{0}},
		{pkg: "a", name: "stable", want: []int{1}},
		{schema: "olm.bundle", pkg: "a", name: "a.v1.0.0", want: []int{2}},
		{schema: "olm.bundle", pkg: "b", name: "a.v1.0.0"},
		{schema: "olm.channel", pkg: "a", name: "a.v1.0.0"},
	} {
		got := c.Query(tc.schema, tc.pkg, tc.name)
		if s, w := string(bytes.Join(got, nil)), wantLines(t, tc.want...); s != w {
			t.Errorf("Query(%q, %q, %q):\n%s\nwant:\n%s", tc.schema, tc.pkg, tc.name, s, w)
		}
	}
}

func TestIntersect(t *testing.T) {
	for _, tc := range []struct{ a, b, want []int32 }{
		{},
		{a: []int32{1, 2}},
		{a: []int32{1, 3, 5, 7}, b: []int32{2, 3, 4, 7, 9}, want: []int32{3, 7}},
		{a: []int32{0, 1, 2}, b: []int32{0, 1, 2}, want: []int32{0, 1, 2}},
		{a: []int32{4}, b: []int32{1, 2, 3}},
	} {
		if got := intersect(tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("intersect(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
