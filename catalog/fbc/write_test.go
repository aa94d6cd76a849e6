package fbc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"sigs.k8s.io/yaml"
)

// assertSameYAML checks that WriteYAML writes cfg exactly as
// declcfg.WriteYAML does (or fails the same way) and returns how many
// blobs took yaml.v2's path.
func assertSameYAML(t testing.TB, cfg declcfg.DeclarativeConfig) int {
	t.Helper()
	var want, got bytes.Buffer
	wantErr := declcfg.WriteYAML(cfg, &want)
	fallbacks, gotErr := writeYAML(cfg, &got)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("error: got %v, declcfg %v", gotErr, wantErr)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("output differs from declcfg.WriteYAML at %s", firstDiff(got.String(), want.String()))
	}
	return fallbacks
}

// assertSameJSON checks WriteJSON against declcfg.WriteJSON.
func assertSameJSON(t testing.TB, cfg declcfg.DeclarativeConfig) {
	t.Helper()
	var want, got bytes.Buffer
	if err := declcfg.WriteJSON(cfg, &want); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(cfg, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("output differs from declcfg.WriteJSON at %s", firstDiff(got.String(), want.String()))
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "end"
}

// metaCfg is a catalog of one other blob with this JSON.
func metaCfg(blob string) declcfg.DeclarativeConfig {
	return declcfg.DeclarativeConfig{Others: []declcfg.Meta{{Schema: "test", Package: "p", Name: "n", Blob: json.RawMessage(blob)}}}
}

// encodeJSON is how declcfg encodes a blob: no HTML escaping.
func encodeJSON(t testing.TB, v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// inScope reports whether the emitter handles s as a value: printable
// characters of the Basic Multilingual Plane and line feeds.
func inScope(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\n', r >= 0x20 && r <= 0x7e:
		case r < 0xa0, r >= 0xd800 && r <= 0xdfff, r == 0x2028, r == 0x2029, r == 0xfeff, r > 0xfffd:
			return false
		}
	}
	return true
}

// inScopeKey reports whether the emitter handles s as a key.
func inScopeKey(s string) bool {
	return inScope(s) && !strings.Contains(s, "\n") && len(s) <= maxSimpleKey
}

// words is a sentence of n words, for strings longer than a line.
func words(n int, sep string) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("word%d", i)
	}
	return strings.Join(ws, sep)
}

// hardStrings are the strings where yaml.v2's choice of style is not
// obvious.
var hardStrings = []string{
	"", " ", "a", "a ", " a", "  a  b  ",
	// Words YAML 1.1 reads as bools or null.
	"true", "True", "TRUE", "tRue", "false", "yes", "Yes", "YES", "yEs", "no", "No", "on", "On", "ON", "off", "Off",
	"y", "Y", "n", "N", "~", "null", "Null", "NULL", "nULL", "<<", "=",
	// Numbers and things that look like them.
	"0", "1", "-1", "+1", "-0", "007", "08", "0x1F", "0X1f", "0o17", "0b101", "-0b101", "0b", "0b2", "1_000", "_1",
	"1.5", ".5", "5.", "1e3", "1E3", "1e21", "1.0", "1e-7", "-1.5e+3", "1.2.3", "v1.2.3", "1-2", "+", "-", ".", "..",
	".inf", ".Inf", "-.inf", "+.INF", ".nan", ".NaN", ".nAn", ".5e999",
	"9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616", "1" + strings.Repeat("0", 400),
	// Timestamps and base 60.
	"2024-01-02", "2024-1-2", "2024-01-02T10:20:30Z", "2024-01-02t10:20:30.5+01:00", "2024-01-02 10:20:30", "2024-13-02", "20240-01-02",
	"1:20", "190:20:30.15", "-1:30", "1:60", "1:2:3", "a:1",
	// Indicators.
	"a: b", "a:b", "a:", ":a", ": a", ":", "?a", "? a", "?", "-a", "- a", "--", "---", "--- a", "---a", "...", "....",
	"a #b", "a#b", "#a", "a #", "&a", "*a", "!a", "|a", ">a", "'a", "\"a", "%a", "@a", "`a", ",a", "[a", "]a", "{a", "}a",
	"a,b", "a[b]", "{a: 1}", "it's", "'", "''", "a\\b", "a\"b", "\\", "\"",
	">=0.0.0 <0.1.0", "quay.io/example/operator@sha256:abc", "http://x/y?z=1&b=2", "<a>&amp;",
	// Long strings: folded at a space past column 80 in plain, single- and
	// double-quoted scalars, never in literal ones.
	words(30, " "), words(30, "  "), words(30, "   "), " " + words(30, " "), words(30, " ") + " ", "- " + words(30, " "),
	words(30, " ") + ": x", "it's " + words(30, " ") + " it's", strings.Repeat("x", 200), strings.Repeat("x", 90) + " y z",
	strings.Repeat("a ", 60), strings.Repeat("ab ", 40) + "'", words(15, " ") + "\n" + words(15, " "),
	words(15, " ") + " \n" + words(15, " "), words(12, "  ") + "\n",
	// Line breaks.
	"\n", "\n\n", "a\n", "a\nb", "a\nb\n", "a\nb\n\n", "\na", "\n\na", " a\nb", "a \nb", "a\n b", "a\n\nb", "a\nb ", "a\n\n",
	"a\n \n", "# a\nb", "- a\n- b", "a: b\nc: d", "'\n'", "\"\n\"",
	// Outside the emitter's ASCII: yaml.v2's path.
	"a\tb", "\t", "a\rb", "😀", "a😀", "\x01", "\x7f", "\x80", "a\xffb", "a\u2028b", "a\u2029", "a\u0085b", "\u009f", "\ufeffa", "a\ufeff",
	"\ufffe", "\uffff", "\U00010000", "a\tb\nc", string([]byte{0xed, 0xa0, 0x80}),
	// Other characters of the Basic Multilingual Plane: the column counts
	// characters, not bytes.
	"café", "日本語", "\u00a0", "a\u00a0", "\u00a0a", "\ufffd", "\ud7ff", "\ue000", "caf\u00e9\n", "ü: x", "# ü", "ü #x",
	strings.Repeat("é ", 50), strings.Repeat("日本語 ", 30), "'" + strings.Repeat("é ", 50), "- " + strings.Repeat("ß", 30) + " " + strings.Repeat("ø ", 40),
	strings.Repeat("é ", 30) + "\n" + strings.Repeat("é", 90) + " ü\n", strings.Repeat("é", 79) + "  x y", "\u00a0 " + words(20, " "),
}

// hardKeys add key orders and key styles to the hard strings.
var hardKeys = []string{
	"a", "b", "A", "B", "_a", "a1", "a2", "a9", "a10", "a01", "a001", "a0", "a00", "1", "2", "10", "01", "x0y", "x00y", "x10y",
	"k8s.io/a", "k8s-io", "a.b", "a-b", "a b", "a/b", "zz", "Zz", "~", "-", "true", "1.5", "a: b", "",
	"é", "e", "f", "éa", "ea", "a١", "a٢", "a١٠", "a9", "ü1", "ü10", "ü2", "日本", "本", "x\u00a0", "ö0", "ö00",
	strings.Repeat("é", maxSimpleKey/2), strings.Repeat("é", maxSimpleKey/2) + "x",
	strings.Repeat("k", maxSimpleKey), strings.Repeat("k", maxSimpleKey+1),
}

func TestWriteYAMLHardStrings(t *testing.T) {
	for _, s := range hardStrings {
		t.Run(fmt.Sprintf("%.40q", s), func(t *testing.T) {
			blob := encodeJSON(t, map[string]any{
				"schema": "test", "package": "p", "name": "n",
				"value": s,
				"list":  []any{s, []any{s, []any{s}}, map[string]any{"k": s, "l": []any{s}}},
				"deep":  map[string]any{"deeper": map[string]any{"deepest": s}},
				"a-key-that-is-much-longer-than-the-others-so-the-value-folds-earlier": s,
			})
			fallbacks := assertSameYAML(t, metaCfg(blob))
			if want := boolInt(!inScope(s)); fallbacks != want {
				t.Errorf("%d blobs took yaml.v2's path, want %d", fallbacks, want)
			}
		})
	}
}

func TestWriteYAMLHardKeys(t *testing.T) {
	keys := append(append([]string{}, hardKeys...), hardStrings...)
	for _, k := range keys {
		t.Run(fmt.Sprintf("%.40q", k), func(t *testing.T) {
			blob := encodeJSON(t, map[string]any{
				"schema": "test", "package": "p", "name": "n",
				k: "v", "list": []any{map[string]any{k: []any{k}, "b": 1}},
			})
			fallbacks := assertSameYAML(t, metaCfg(blob))
			if want := boolInt(!inScopeKey(k)); fallbacks != want {
				t.Errorf("%d blobs took yaml.v2's path, want %d", fallbacks, want)
			}
		})
	}
	t.Run("all keys in one map", func(t *testing.T) {
		m := map[string]any{"schema": "test"}
		for _, k := range hardKeys {
			if inScopeKey(k) {
				m[k] = k
			}
		}
		if fallbacks := assertSameYAML(t, metaCfg(encodeJSON(t, m))); fallbacks != 0 {
			t.Errorf("%d blobs took yaml.v2's path, want 0", fallbacks)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestWriteYAMLRawBlobs(t *testing.T) {
	for _, tc := range []struct {
		name string
		blob string
		// fallback is whether the blob takes yaml.v2's path.
		fallback bool
	}{
		{"ints", `{"schema":"s","a":0,"b":-5,"c":9223372036854775807,"d":-9223372036854775808,"e":[1,[2,[3,[]]]]}`, false},
		{"big int", `{"schema":"s","a":9223372036854775808}`, true},
		{"big negative int", `{"schema":"s","a":-9223372036854775809}`, true},
		{"huge int", `{"schema":"s","a":123456789012345678901234567890}`, true},
		{"minus zero", `{"schema":"s","a":-0}`, true},
		{"float one", `{"schema":"s","a":1.0}`, true},
		{"float big", `{"schema":"s","a":1e21}`, true},
		{"float small", `{"schema":"s","a":1e-7}`, true},
		{"float", `{"schema":"s","a":[0.5,-2.25,1E400]}`, true},
		{"bools and null", `{"schema":"s","a":true,"b":false,"c":null,"d":[true,null,false]}`, false},
		{"empty collections", `{"schema":"s","a":{},"b":[],"c":[[]],"d":[{}],"e":{"f":{}},"g":[[],{},[[]]]}`, false},
		{"lists of lists", `{"schema":"s","a":[[1,2],[[3],[4,[5]]],[{"b":[6]}]],"c":[{"d":[[{"e":"f"}]]}]}`, false},
		{"maps in lists", `{"schema":"s","a":[{"b":1,"a":2},{"c":{"d":[{"e":1,"f":2}]}}]}`, false},
		{"whitespace in JSON", "{ \"schema\" : \"s\" ,\n \"a\" : [ 1 , 2 ] }", false},
		{"escaped slash", `{"schema":"s","a":"a\/b"}`, true},
		{"unicode escape", `{"schema":"s","a":"\u0041"}`, true},
		{"escaped tab", `{"schema":"s","a":"a\tb"}`, true},
		{"surrogate pair", `{"schema":"s","a":"\ud83d\ude00"}`, true},
		{"duplicate keys", `{"schema":"s","a":1,"a":2}`, true},
		{"escapes", `{"schema":"s","a\"b":"c\\d\"e\nf","g":"\"\n"}`, false},
		{"deep", `{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, false},
		{"too deep", `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, true},
		{"as deep as yaml.v2 reads", `{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`, true},
		{"empty object", `{}`, true},
		{"array", `[1,2]`, true},
		{"scalar", `"a"`, true},
		{"invalid", `{"schema":`, false}, // fails in encoding/json first
	} {
		t.Run(tc.name, func(t *testing.T) {
			fallbacks := assertSameYAML(t, metaCfg(tc.blob))
			if fallbacks != boolInt(tc.fallback) {
				t.Errorf("%d blobs took yaml.v2's path, want %d", fallbacks, boolInt(tc.fallback))
			}
		})
	}
}

// TestWriteYAMLOrder covers declcfg's order of blobs: packages by name,
// channels and bundles by name (equal names too), others by schema, blobs
// without a package last, blobs of an empty package name dropped.
func TestWriteYAMLOrder(t *testing.T) {
	pkg := func(name string) declcfg.Package {
		return declcfg.Package{Schema: declcfg.SchemaPackage, Name: name, DefaultChannel: "stable"}
	}
	ch := func(p, name string, entries ...string) declcfg.Channel {
		c := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: p, Name: name}
		for _, e := range entries {
			c.Entries = append(c.Entries, declcfg.ChannelEntry{Name: e, SkipRange: "<" + e})
		}
		return c
	}
	bundle := func(p, name, image string) declcfg.Bundle {
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: p, Name: name, Image: image,
			Properties: []property.Property{property.MustBuildPackage(p, "1.0.0"), property.MustBuildGVK("g", "v1", "K")}}
	}
	other := func(p, schema, name string) declcfg.Meta {
		return declcfg.Meta{Schema: schema, Package: p, Name: name, Blob: json.RawMessage(encodeJSON(t, map[string]string{"schema": schema, "package": p, "name": name}))}
	}
	cfg := declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{pkg("b"), pkg("a"), pkg(""), pkg("a")},
		Channels: []declcfg.Channel{ch("b", "stable", "b.v1"), ch("a", "z", "a.v2"), ch("a", "alpha", "a.v1"), ch("a", "z", "a.v3"), ch("", "x")},
		Bundles: []declcfg.Bundle{bundle("a", "a.v2", "i2"), bundle("a", "a.v1", "i1"), bundle("a", "a.v1", "i1-again"),
			bundle("c", "c.v1", ""), bundle("", "none", "")},
		Others: []declcfg.Meta{other("a", "z.schema", "1"), other("", "root", "r1"), other("a", "m.schema", "2"),
			other("a", "m.schema", "3"), other("", "root", "r0")},
		Deprecations: []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: "a",
			Entries: []declcfg.DeprecationEntry{{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "gone\n"}}},
			{Schema: declcfg.SchemaDeprecation, Package: ""}},
	}
	if fallbacks := assertSameYAML(t, cfg); fallbacks != 0 {
		t.Errorf("%d blobs took yaml.v2's path, want 0", fallbacks)
	}
	assertSameJSON(t, cfg)
	if fallbacks := assertSameYAML(t, declcfg.DeclarativeConfig{}); fallbacks != 0 {
		t.Errorf("empty catalog: %d fallbacks", fallbacks)
	}
}

// TestWriteYAMLDeepProperty: a property value that encoding/json takes
// but is too deep for yaml.v2 inside its bundle fails as in declcfg.
func TestWriteYAMLDeepProperty(t *testing.T) {
	value := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	cfg := declcfg.DeclarativeConfig{Bundles: []declcfg.Bundle{{Schema: declcfg.SchemaBundle, Package: "p", Name: "p.v1",
		Properties: []property.Property{{Type: "deep", Value: json.RawMessage(value)}}}}}
	if fallbacks := assertSameYAML(t, cfg); fallbacks != 1 {
		t.Errorf("%d blobs took yaml.v2's path, want 1", fallbacks)
	}
	var buf bytes.Buffer
	if err := WriteYAML(cfg, &buf); err == nil {
		t.Error("no error for a bundle nested deeper than yaml.v2 reads")
	}
}

// TestWriteYAMLCyclicKeyOrder: yaml.v2's key order has cycles among keys
// with leading zeros ("a0a" < "a1" < "a01" < "a0a"), so its output for
// such an object depends on the map's iteration order; the writer leaves
// it to yaml.v2, and keeps its own path for digits in order.
func TestWriteYAMLCyclicKeyOrder(t *testing.T) {
	if !keyLess("a0a", "a1") || !keyLess("a1", "a01") || !keyLess("a01", "a0a") {
		t.Fatal("no cycle in keyLess: update the test")
	}
	for _, tc := range []struct {
		blob     string
		fallback bool
	}{
		{`{"schema":"s","a0a":1,"a1":2,"a01":3}`, true},
		{`{"schema":"s","a":{"a0a":1,"a1":2,"a01":3}}`, true},
		{`{"schema":"s","a0a":1,"a1":2}`, false},
		{`{"schema":"s","a10":1,"a9":2,"a1":3,"b2c":4,"b2b":5,"k8s":6}`, false},
	} {
		var buf bytes.Buffer
		fallbacks, err := writeYAML(metaCfg(tc.blob), &buf)
		if err != nil {
			t.Fatal(err)
		}
		if fallbacks != boolInt(tc.fallback) {
			t.Errorf("%s: %d blobs took yaml.v2's path, want %d", tc.blob, fallbacks, boolInt(tc.fallback))
		}
	}
}

// TestWriteYAMLError: a blob that is not JSON fails as in declcfg.
func TestWriteYAMLError(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteYAML(metaCfg(`{"schema":`), &buf); err == nil {
		t.Fatal("no error for a blob that is not JSON")
	}
}

// TestWriteTestdata compares the writers on the catalogs in
// catalog/render/testdata (render's golden output).
func TestWriteTestdata(t *testing.T) {
	files, err := filepath.Glob("../render/testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" && ext != ".json" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cfg, err := declcfg.LoadReader(r)
			if err != nil {
				t.Fatal(err)
			}
			if fallbacks := assertSameYAML(t, *cfg); fallbacks != 0 {
				t.Errorf("%d blobs took yaml.v2's path, want 0", fallbacks)
			}
			assertSameJSON(t, *cfg)
		})
		n++
	}
	if n == 0 {
		t.Fatal("no catalogs in ../render/testdata")
	}
}

// TestScalarStyle checks the emitter's choice of plain, single- and
// double-quoted style against yaml.v2 itself, for one-line strings.
func TestScalarStyle(t *testing.T) {
	for _, s := range append(append([]string{}, hardStrings...), hardKeys...) {
		checkScalarStyle(t, s)
	}
}

// checkScalarStyle compares canBePlain and blockPlainAllowed for s with the
// style yaml.v2 writes s in.
func checkScalarStyle(t *testing.T, s string) {
	t.Helper()
	if !inScopeKey(s) {
		return
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want byte = 'p'
	if y[0] == '"' || y[0] == '\'' {
		want = y[0]
	}
	var got byte = 'p'
	switch {
	case !canBePlain(s):
		got = '"'
	case !blockPlainAllowed(s):
		got = '\''
	}
	if got != want {
		t.Errorf("%q: style %c, yaml.v2 writes %q", s, got, y)
	}
}

func FuzzScalarStyle(f *testing.F) {
	for _, s := range hardStrings {
		f.Add(s)
	}
	f.Fuzz(checkScalarStyle)
}

// FuzzWriteYAML compares WriteYAML with declcfg.WriteYAML on a blob made
// of two fuzzed keys and a fuzzed value in every position, and on a
// fuzzed blob.
func FuzzWriteYAML(f *testing.F) {
	for i, s := range hardStrings {
		k, k2 := hardKeys[i%len(hardKeys)], hardKeys[(i*7+3)%len(hardKeys)]
		f.Add(k, k2, s, []byte(encodeJSON(f, map[string]any{"schema": "s", k: []any{s, map[string]any{s: k2}}})))
	}
	for _, b := range []string{`{"schema":"s","a":[1,[2,{}],[]],"b":{"c":null,"d":true}}`, `{"a":1.5,"b":"x\/y"}`} {
		f.Add("k", "k2", "v", []byte(b))
	}
	f.Fuzz(func(t *testing.T, key, key2, value string, blob []byte) {
		assertSameYAML(t, metaCfg(encodeJSON(t, map[string]any{
			"schema": "test", "package": "p", "name": "n",
			"value": value, key: value, key2: []any{key},
			"list": []any{value, []any{value, []any{key}}, map[string]any{key: value, key2: key, "l": []any{value}}},
			"deep": map[string]any{"deeper": map[string]any{key: []any{map[string]any{key: value, key2: value}}}},
			"a-key-that-is-much-longer-than-the-others-so-the-value-folds-earlier": value,
		})))
		var m map[string]any
		if json.Unmarshal(blob, &m) == nil {
			assertSameYAML(t, metaCfg(string(blob)))
		}
	})
}
