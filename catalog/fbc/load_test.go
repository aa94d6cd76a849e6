package fbc

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// sameLoad compares LoadBytes with declcfg.LoadReader on one file: the
// same blobs, or both an error.
func sameLoad(t testing.TB, data []byte) {
	t.Helper()
	want, wantErr := declcfg.LoadReader(bytes.NewReader(data))
	got, gotErr := LoadBytes(data)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("declcfg error %v, fbc error %v\n%s", wantErr, gotErr, data)
	}
	if wantErr != nil {
		return
	}
	if d := difference(want, got); d != "" {
		t.Fatalf("fbc differs from declcfg: %s\ninput:\n%s", d, data)
	}
}

// fast tells whether the fast parser takes the whole file.
func fast(data []byte) bool {
	docs, err := parseYAMLStream(data, map[string]any{})
	if err != nil {
		return false
	}
	for _, d := range docs {
		if _, err := newMeta(d); err != nil {
			return false
		}
	}
	return true
}

func TestLoadBytesEqualsDeclcfg(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		// slow means the fast parser must give the file up.
		slow bool
	}{
		{name: "package", yaml: "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n"},
		{name: "no leading separator", yaml: "schema: olm.package\nname: foo\n---\nschema: olm.channel\npackage: foo\nname: stable\nentries:\n- name: foo.v1\n"},
		{name: "comments and blank lines", yaml: "---\n\nschema: olm.package # trailing\n\n# between\nname: foo   \ndescription: a#b c # d\n--- # sep comment\nschema: olm.channel\npackage: foo\nname: s\nentries:\n  # indented comment\n  - name: a\n    replaces: b\n  - name: b\n"},
		{name: "sequence at key indent", yaml: "schema: olm.channel\nentries:\n- name: a\n  skips:\n  - b\n  - c\n  skipRange: '>=0.0.0 <1.0.0'\n- name: b\nname: s\npackage: p\n"},
		{name: "YAML 1.1 scalars", yaml: "schema: custom\nname: x\nk01: yes\nk02: no\nk03: on\nk04: off\nk05: y\nk06: n\nk07: ~\nk08: null\nk09: 1\nk10: 1.0\nk11: 0x1F\nk12: 1e3\nk13: .5\nk14: -1\nk15: +2\nk16: 0.1.0\nk17: 1_000\nk18: 2024-01-02\nk19: 08\nk20: True\nk21: FALSE\nk22: Null\nk23: 12345678901234567890\nk24: 0o17\nk25: 017\nk26: 1:20\nk27: -0\nk28: 1.2.3\nk29: .5.5\nk30: 1..2\nk31: -1.2.3\nk32: ~x\nk33: yes-no\nk34: Off\nnull-ish: nothing\ntrue-ish: nope\n"},
		{name: "quoted scalars", yaml: "schema: custom\nname: 'it''s'\na: \"tab\\there \\\"q\\\" \\\\ \\u00e9 \\x41 \\U0001F600\"\nb: 'true'\nc: \"1.0\"\nd: ''\ne: \"\"\nf: ' lead and trail '\n\"quoted key\": 1\n'single key': 2\n"},
		{name: "empty collections and nulls", yaml: "schema: custom\nname: x\na: []\nb: {}\nc:\nd: # only a comment\ne:\n- \n-\n- []\n"},
		{name: "literal blocks", yaml: "schema: custom\nname: x\na: |\n  line one\n\n  line three\n    indented more\n  # not a comment\nb: |-\n  stripped\n  last  \nc: |\n\n  leading empty line\n\n\nd: after\n"},
		{name: "nested sequences and maps", yaml: "schema: custom\nname: x\nlist:\n- - a\n  - b\n- - c\n-   key: v\n    other: w\n- k:\n    deep: 1\nmap:\n    indented: by four\n    again:\n        - x\n"},
		{name: "unicode", yaml: "schema: custom\nname: x\ndescription: Grüße aus Köln — 日本語 😀\n"},
		{name: "keys ordering and case", yaml: "schema: custom\nname: x\nb10: 1\nb9: 2\nB: 3\nSchemaLike: 4\n"},
		{name: "html characters", yaml: "schema: custom\nname: x\na: <b>&</b>\n"},
		{name: "bundle inline objects", yaml: bundleYAML(t, `{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"foo.v1"}}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`)},
		{name: "bundle object in YAML", yaml: bundleYAML(t, "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: foo.v1\n")},
		{name: "bundle CSV kind escaped", yaml: bundleYAML(t, `{"kind":"ClusterServiceVersio\u006e","apiVersion":"operators.coreos.com/v1alpha1"}`)},
		{name: "bundle CSV with slash escape", yaml: bundleYAML(t, `{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com\/v1alpha1"}`)},
		{name: "bundle CSV with surrogates", yaml: bundleYAML(t, `{"kind":"ClusterServiceVersion","apiVersion":"v1","x":"\ud83d\ude00"}`)},
		{name: "bundle CSV kind not a string", yaml: bundleYAML(t, `{"kind":["ClusterServiceVersion"],"apiVersion":"v1"}`)},
		{name: "bundle CSV duplicate kind", yaml: bundleYAML(t, `{"kind":"ConfigMap","apiVersion":"v1","kind":"ClusterServiceVersion"}`)},
		{name: "bundle CSV second", yaml: bundleYAML(t, `{"kind":"ConfigMap","apiVersion":"v1"}`, `{"kind":"ClusterServiceVersion","apiVersion":"v1"}`, `{"kind":"ClusterServiceVersion","apiVersion":"v2"}`)},
		{name: "bundle CSV with trailing data", yaml: bundleYAML(t, `{"kind":"ClusterServiceVersion","apiVersion":"v1"} {}`)},
		{name: "bundle CSV invalid JSON", yaml: bundleYAML(t, `{"kind":"ClusterServiceVersion","apiVersion":"v1",}`)},
		{name: "bundle without kind", yaml: bundleYAML(t, `{"apiVersion":"v1","spec":{"kind":"ClusterServiceVersion"}}`)},
		{name: "bundle bad base64", yaml: "schema: olm.bundle\nname: b\npackage: p\nproperties:\n- type: olm.bundle.object\n  value:\n    data: not base64!\n"},

		{name: "comment before the first separator", yaml: "# head\n---\nschema: olm.package\nname: x\n", slow: true},
		{name: "infinity", yaml: "schema: custom\nname: x\na: .inf\n", slow: true},
		{name: "stream ending with a separator", yaml: "schema: custom\nname: x\n---\n", slow: true},
		{name: "only a separator", yaml: "---", slow: true},
		{name: "two separators in a row", yaml: "schema: a\nname: x\n---\n---\nschema: b\nname: y\n", slow: true},
		{name: "two leading separators", yaml: "---\n---\nschema: b\nname: y\n", slow: true},
		{name: "anchors", yaml: "schema: custom\nname: &n x\nother: *n\n", slow: true},
		{name: "flow mapping", yaml: "schema: custom\nname: x\na: {b: c}\n", slow: true},
		{name: "multi-line plain", yaml: "schema: custom\nname: x\na: one\n  two\n", slow: true},
		{name: "folded block", yaml: "schema: custom\nname: x\na: >\n  one\n  two\n", slow: true},
		{name: "keep chomping", yaml: "schema: custom\nname: x\na: |+\n  one\n\n", slow: true},
		{name: "tab", yaml: "schema: custom\nname: x\na: \"one\ttwo\"\n", slow: true},
		{name: "CRLF", yaml: "schema: custom\r\nname: x\r\n", slow: true},
		{name: "duplicate key", yaml: "schema: custom\nname: x\nname: y\n", slow: true},
		{name: "folded duplicate key", yaml: "schema: custom\nname: x\nName: y\n", slow: true},
		{name: "boolean key", yaml: "schema: custom\nname: x\ny: 1\n", slow: true},
		{name: "merge key", yaml: "schema: custom\nname: x\n<<: {a: 1}\n", slow: true},
		{name: "name not a string", yaml: "schema: custom\nname: 1\n", slow: true},
		{name: "missing schema", yaml: "name: x\n", slow: false},
		{name: "empty document", yaml: "\n---\nschema: custom\nname: x\n", slow: true},
		{name: "bad separator", yaml: "schema: custom\nname: x\n--- {}\n", slow: true},
		{name: "root sequence", yaml: "- a\n- b\n", slow: true},
		{name: "wrong indentation", yaml: "schema: custom\nname: x\na:\n  - b\n  c: d\n", slow: true},
		{name: "mapping value on key line", yaml: "schema: custom\nname: x\na: b: c\n", slow: true},
		{name: "unknown escape", yaml: "schema: custom\nname: x\na: \"\\/\"\n", slow: true},
		{name: "tag", yaml: "schema: custom\nname: x\na: !!str 1\n", slow: true},
		{name: "multi-line quoted", yaml: "schema: custom\nname: x\na: \"one\n  two\"\n", slow: true},
		{name: "JSON stream", yaml: `{"schema":"olm.package","name":"foo"}` + "\n" + `{"schema":"olm.channel","package":"foo","name":"s","entries":[{"name":"a"}]}`, slow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.yaml)
			if got := fast(data); got == tc.slow {
				t.Errorf("fast parser took the file: %v, want %v", got, !tc.slow)
			}
			sameLoad(t, data)
		})
	}
}

// bundleYAML writes an olm.bundle with the objects as olm.bundle.object
// properties, the way declcfg writes it.
func bundleYAML(t testing.TB, objects ...string) string {
	t.Helper()
	b := declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: "foo.v1", Package: "foo", Image: "",
		Properties: []property.Property{property.MustBuildPackage("foo", "1.0.0")}}
	for _, o := range objects {
		b.Properties = append(b.Properties, property.MustBuildBundleObject([]byte(o)))
	}
	var buf bytes.Buffer
	if err := declcfg.WriteYAML(declcfg.DeclarativeConfig{Bundles: []declcfg.Bundle{b}}, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestLoadWrittenCatalog loads catalogs that declcfg's writers wrote, in
// YAML and JSON: what catalogs mostly are.
func TestLoadWrittenCatalog(t *testing.T) {
	cfg := sampleCatalog(t, 3, 4)
	for _, write := range []struct {
		name string
		fn   func(declcfg.DeclarativeConfig, *bytes.Buffer) error
	}{
		{"yaml", func(c declcfg.DeclarativeConfig, b *bytes.Buffer) error { return declcfg.WriteYAML(c, b) }},
		{"json", func(c declcfg.DeclarativeConfig, b *bytes.Buffer) error { return declcfg.WriteJSON(c, b) }},
	} {
		t.Run(write.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := write.fn(cfg, &buf); err != nil {
				t.Fatal(err)
			}
			if write.name == "yaml" && !fast(buf.Bytes()) {
				t.Fatal("the fast parser gave up on what declcfg.WriteYAML writes")
			}
			sameLoad(t, buf.Bytes())
		})
	}
}

// TestLoadEqualsLoadFS loads a catalog directory (with .indexignore) both ways.
func TestLoadEqualsLoadFS(t *testing.T) {
	fsys := fstest.MapFS{
		".indexignore":       {Data: []byte("ignored/\n*.md\n")},
		"README.md":          {Data: []byte("# not a catalog\n")},
		"ignored/broken.txt": {Data: []byte("{{{")},
	}
	for path, data := range packageFiles(t, sampleCatalog(t, 4, 3), true) {
		fsys[path] = &fstest.MapFile{Data: data}
	}
	fsys["others.yaml"] = &fstest.MapFile{Data: []byte("schema: example.com/other\nname: o\nvalue: 1\n")}
	want, err := declcfg.LoadFS(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	sortConfig(want)
	sortConfig(got)
	if d := difference(want, got); d != "" {
		t.Fatalf("fbc differs from declcfg: %s", d)
	}
}

// LoadForWrite loads what Load loads but the bundles' decoded objects, and
// fails where Load fails on an object that does not decode.
func TestLoadForWrite(t *testing.T) {
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		wantErr bool
	}{
		{name: "a catalog of inline bundles", fsys: fstest.MapFS{}},
		{name: "an object that is not base64", fsys: fstest.MapFS{
			"bad.yaml": {Data: []byte("schema: olm.bundle\nname: b\npackage: p\nproperties:\n- type: olm.bundle.object\n  value:\n    data: not base64!\n")},
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for path, data := range packageFiles(t, sampleCatalog(t, 2, 3), true) {
				tt.fsys[path] = &fstest.MapFile{Data: data}
			}
			want, wantErr := Load(t.Context(), tt.fsys)
			got, err := LoadForWrite(t.Context(), tt.fsys)
			if tt.wantErr {
				if wantErr == nil || err == nil || err.Error() != wantErr.Error() {
					t.Fatalf("LoadForWrite error %v, want Load's %v", err, wantErr)
				}
				return
			}
			if wantErr != nil || err != nil {
				t.Fatal(wantErr, err)
			}
			objects := 0
			for i := range want.Bundles {
				objects += len(want.Bundles[i].Objects)
				want.Bundles[i].Objects, want.Bundles[i].CsvJSON = nil, ""
			}
			if objects == 0 {
				t.Fatal("the sample catalog has no bundle objects")
			}
			if d := difference(want, got); d != "" {
				t.Fatalf("LoadForWrite differs from Load without objects: %s", d)
			}
		})
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	fsys := fstest.MapFS{
		"good/catalog.yaml": {Data: []byte("schema: olm.package\nname: good\n")},
		"bad/catalog.yaml":  {Data: []byte("schema: olm.package\nname: bad\n---\nschema: olm.channel\nentries: 3\n")},
	}
	_, err := Load(context.Background(), fsys)
	if err == nil || !strings.Contains(err.Error(), "bad/catalog.yaml") || !strings.Contains(err.Error(), "parse channel") {
		t.Fatalf("error %v, want one naming bad/catalog.yaml and the channel", err)
	}
}

// difference describes the first blob where two catalogs differ, or is
// empty when they are deeply equal (including the fields JSON leaves out).
func difference(want, got *declcfg.DeclarativeConfig) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	for _, part := range []struct {
		name      string
		want, got any
	}{
		{"packages", want.Packages, got.Packages},
		{"channels", want.Channels, got.Channels},
		{"bundles", want.Bundles, got.Bundles},
		{"deprecations", want.Deprecations, got.Deprecations},
		{"others", want.Others, got.Others},
	} {
		w, g := reflect.ValueOf(part.want), reflect.ValueOf(part.got)
		if w.Len() != g.Len() {
			return fmt.Sprintf("%s: declcfg has %d, fbc %d", part.name, w.Len(), g.Len())
		}
		for i := range w.Len() {
			if !reflect.DeepEqual(w.Index(i).Interface(), g.Index(i).Interface()) {
				return fmt.Sprintf("%s[%d]:\ndeclcfg %+v\nfbc     %+v", part.name, i, w.Index(i).Interface(), g.Index(i).Interface())
			}
		}
	}
	return "unequal"
}

// packageFiles writes each package of cfg as <package>/catalog.yaml, or
// every other one as catalog.json with mixJSON.
func packageFiles(t testing.TB, cfg declcfg.DeclarativeConfig, mixJSON bool) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for i, p := range cfg.Packages {
		pkg := declcfg.DeclarativeConfig{Packages: []declcfg.Package{p}}
		for _, c := range cfg.Channels {
			if c.Package == p.Name {
				pkg.Channels = append(pkg.Channels, c)
			}
		}
		for _, b := range cfg.Bundles {
			if b.Package == p.Name {
				pkg.Bundles = append(pkg.Bundles, b)
			}
		}
		var buf bytes.Buffer
		write, ext := declcfg.WriteYAML, "yaml"
		if mixJSON && i%2 == 1 {
			write, ext = declcfg.WriteJSON, "json"
		}
		if err := write(pkg, &buf); err != nil {
			t.Fatal(err)
		}
		files[p.Name+"/catalog."+ext] = buf.Bytes()
	}
	return files
}

func sortConfig(cfg *declcfg.DeclarativeConfig) {
	slices.SortFunc(cfg.Packages, func(a, b declcfg.Package) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(cfg.Channels, func(a, b declcfg.Channel) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(cfg.Bundles, func(a, b declcfg.Bundle) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(cfg.Others, func(a, b declcfg.Meta) int { return bytes.Compare(a.Blob, b.Blob) })
}

// sampleCatalog makes packages of inline bundles whose CSVs carry what
// real ones do: a multi-line description, annotations, unicode, HTML.
func sampleCatalog(t testing.TB, packages, bundles int) declcfg.DeclarativeConfig {
	t.Helper()
	var cfg declcfg.DeclarativeConfig
	for p := range packages {
		pkg := fmt.Sprintf("pkg-%d", p)
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable",
			Description: "A package.\n\nWith a second paragraph: <b>bold</b> & more — ünïcödé.\n"})
		ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: pkg, Name: "stable"}
		for v := range bundles {
			name := fmt.Sprintf("%s.v%d.0.0", pkg, v)
			csv := map[string]any{
				"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
				"metadata": map[string]any{"name": name, "annotations": map[string]any{
					"capabilities": "Seamless Upgrades", "alm-examples": `[{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":3}}]`,
					"containerImage": "registry.example/op@sha256:0123", "createdAt": "2026-01-02T03:04:05Z"}},
				"spec": map[string]any{"version": fmt.Sprintf("%d.0.0", v), "description": "Long description line one that is longer than eighty characters, to see how it is folded.\nLine two: yes\n\n- a list item\n",
					"replicas": 3, "ratio": 0.5, "install": map[string]any{"strategy": "deployment"}},
			}
			crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": "widgets.example.com"}, "spec": map[string]any{"group": "example.com"}}
			b := declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: name,
				Properties: []property.Property{
					property.MustBuildPackage(pkg, fmt.Sprintf("%d.0.0", v)),
					property.MustBuildGVK("example.com", "v1", "Widget"),
					mustBuild(t, property.TypeCSVMetadata, map[string]any{"description": csv["spec"].(map[string]any)["description"], "keywords": []string{"yes", "no", "1.0"}, "annotations": csv["metadata"].(map[string]any)["annotations"]}),
					property.MustBuildBundleObject(mustJSON(t, crd)),
					property.MustBuildBundleObject(mustJSON(t, csv)),
				}}
			if v > 0 {
				ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: name, Replaces: fmt.Sprintf("%s.v%d.0.0", pkg, v-1), SkipRange: fmt.Sprintf(">=0.0.0 <%d.0.0", v)})
			} else {
				ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: name})
			}
			cfg.Bundles = append(cfg.Bundles, b)
		}
		cfg.Channels = append(cfg.Channels, ch)
	}
	return cfg
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustBuild(t testing.TB, typ string, v any) property.Property {
	return property.Property{Type: typ, Value: mustJSON(t, v)}
}

func FuzzLoadBytes(f *testing.F) {
	for _, name := range []string{"render.yaml", "render-zeta.yaml", "render.json"} {
		if data, err := os.ReadFile(filepath.Join("..", "testdata", name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("schema: custom\nname: x\na:\n- b: |\n    text\n  c: 'd'\n"))
	f.Add([]byte("---\nschema: b\nname: y\n---\n# only comment\n---\n\n---\nschema: c\nname: z\n"))
	f.Add([]byte("schema: a\nname: x\nl: |-\n  one\n\n  two  \n- x\nq: 'a''b' # c\nd: \"\\u00e9\"\n"))
	f.Add([]byte("schema: olm.package\nname: p\n---\nschema: olm.channel\npackage: p\nname: s\nentries:\n- name: a\n  skips:\n  - b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameLoad(t, data)
	})
}

// TestEmptyDocumentErrors: where declcfg fails on an empty document with
// a message that does not say so, the error names the line.
func TestEmptyDocumentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int
	}{
		{"comment before the first separator", "# head\n---\nschema: olm.package\nname: x\n", 1},
		{"two separators in a row", "schema: olm.package\nname: x\n---\n---\nschema: olm.package\nname: y\n", 4},
		// declcfg reads this one fine, and so does LoadBytes.
		{"a stream ending with a separator", "schema: olm.package\nname: x\n---\n", 0},
		{"a document of comments", "schema: olm.package\nname: x\n---\n# nothing\n---\nschema: olm.package\nname: y\n", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tc.yaml))
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := fmt.Sprintf("line %d: an empty YAML document", tc.line)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one starting %q", err, want)
			}
		})
	}
}

// A file that does not load is named with the document and its line (the
// byte where it ends, for a truncated JSON file), quoting no more than a
// short excerpt of the document, however large it is.
func TestLoadBytesErrorsSayWhere(t *testing.T) {
	big := strings.Repeat("eHh4", 2000) // an inline bundle object's worth
	tests := []struct {
		name, data string
		// want is a substring of the error.
		want string
	}{{
		name: "a truncated YAML file: the last document lost its schema",
		data: "schema: olm.package\nname: p\n---\nname: p.v0.1.0\npackage: p\nproperties:\n- type: olm.bundle.object\n  value:\n    data: " + big + "\n",
		want: `document 2 (line 4): the document has no "schema" key (a truncated file?); it starts {"name":"p.v0.1.0","package":"p","properties":[{"type":"olm.bundle.object","valu...`,
	}, {
		name: "a truncated JSON file",
		data: "{\"schema\": \"olm.package\", \"name\": \"p\"}\n{\"schema\": \"olm.bundle\", \"name\": \"p.v0.1.0\", \"properties\": [{\"type\": \"olm.bundle.object\", \"value\": {\"data\": \"" + big,
		want: "the file ends inside a document at byte %LEN% (line 2): is it truncated?",
	}, {
		name: "a JSON document without a schema",
		data: "{\"schema\": \"olm.package\", \"name\": \"p\"}\n{\"name\": \"x\", \"data\": \"" + big + "\"}\n",
		want: `document 2: the document has no "schema" key (a truncated file?); it starts {"data":"eHh4`,
	}, {
		name: "a YAML syntax error in the third document",
		data: "schema: olm.package\nname: p\n---\nschema: olm.package\nname: q\n---\n# c\nschema: olm.package\nname: [r\n",
		want: "document 3 (line 7): ",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadBytes([]byte(tt.data))
			tt.want = strings.ReplaceAll(tt.want, "%LEN%", fmt.Sprint(len(tt.data)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if len(err.Error()) > 400 {
				t.Errorf("the error is %d bytes long: %.400s...", len(err.Error()), err)
			}
		})
	}
}

func TestYAMLDocStarts(t *testing.T) {
	tests := []struct {
		data string
		want []int
	}{
		{"", nil},
		{"a: 1\n", []int{1}},
		{"---\na: 1\n", []int{2}},
		{"a: 1\n---\nb: 2\n---\n", []int{1, 3}},
		{"a: 1\n---\n---\nb: 2", []int{1, 4}},
		{"# head\n--- # comment\na: 1\n", []int{1, 3}},
	}
	for _, tt := range tests {
		if got := yamlDocStarts([]byte(tt.data)); !slices.Equal(got, tt.want) {
			t.Errorf("yamlDocStarts(%q) = %v, want %v", tt.data, got, tt.want)
		}
	}
}
