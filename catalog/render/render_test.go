package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/validate"
	goldenfile "github.com/chartpilot/chartpilot/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.File(t, filepath.Join("testdata", name), got, *update)
}

// goldenCatalog is an image-based catalog (short, readable golden files)
// with two packages, two channels, a deprecation.
func goldenCatalog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "catalog")
	for _, pkg := range []string{"zeta", "alpha"} {
		if err := edit.Init(t.Context(), edit.InitOptions{Dir: dir, Package: pkg, DefaultChannel: "stable"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []struct{ pkg, version, channels string }{
		{"zeta", "0.2.0", "stable"},
		{"zeta", "0.1.0", "stable"},
		{"alpha", "1.0.0", "stable"},
		{"alpha", "1.1.0", "stable,fast"},
		{"alpha", "1.0.1", "stable"},
	} {
		_, err := edit.Add(t.Context(), edit.AddOptions{
			Dir:       dir,
			BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: v.pkg, Version: v.version, Channels: v.channels}),
			Image:     "registry.example.com/" + v.pkg + "-bundle:v" + v.version,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := edit.Deprecate(t.Context(), edit.DeprecateOptions{Dir: dir, Package: "alpha", Bundle: "1.0.0", Message: "use 1.0.1"}); err != nil {
		t.Fatal(err)
	}
	if err := edit.Deprecate(t.Context(), edit.DeprecateOptions{Dir: dir, Package: "alpha", Channel: "fast", Message: "fast is folded into stable"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRender(t *testing.T) {
	dir := goldenCatalog(t)
	tests := []struct {
		name   string
		opts   Options
		golden string
	}{
		{name: "yaml", opts: Options{}, golden: "render.yaml"},
		{name: "json", opts: Options{Format: fbc.FormatJSON}, golden: "render.json"},
		{name: "one package", opts: Options{Packages: []string{"zeta"}}, golden: "render-zeta.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first bytes.Buffer
			if err := Render(t.Context(), &first, os.DirFS(dir), tt.opts); err != nil {
				t.Fatal(err)
			}
			// Rendering is deterministic although files load concurrently.
			for range 5 {
				var again bytes.Buffer
				if err := Render(t.Context(), &again, os.DirFS(dir), tt.opts); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(first.Bytes(), again.Bytes()) {
					t.Fatal("two renders differ")
				}
			}
			golden(t, tt.golden, first.Bytes())
			// The output is a valid catalog of its own.
			cfg, err := declcfg.LoadReader(bytes.NewReader(first.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := validate.Config("rendered", cfg); err != nil {
				t.Error(err)
			}
		})
	}
}

// failingWriter fails every write after the first n.
type failingWriter struct {
	n      int
	writes int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > w.n {
		return 0, errors.New("pipe closed")
	}
	return len(p), nil
}

// Render streams packages to the writer in name order as they are encoded,
// so the catalog and its whole rendering are not in memory at once; a
// writer that fails stops it, with more packages than it encodes ahead.
func TestRenderStreams(t *testing.T) {
	dir := t.TempDir()
	packages := 3 * renderLookahead()
	catalogtest.GenerateCatalog(t, dir, packages, 2)
	var want bytes.Buffer
	if err := Render(t.Context(), &want, os.DirFS(dir), Options{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// n is how many writes succeed
		n       int
		wantErr string
	}{
		{name: "the first write fails", n: 0, wantErr: "pipe closed"},
		{name: "a write in the middle fails", n: packages / 2, wantErr: "pipe closed"},
		{name: "every write succeeds, one per package", n: packages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &failingWriter{n: tt.n}
			err := Render(t.Context(), w, os.DirFS(dir), Options{})
			if tt.wantErr == "" {
				if err != nil || w.writes != packages {
					t.Fatalf("Render() = %v after %d writes, want %d writes, one per package", err, w.writes, packages)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Render() = %v, want %q", err, tt.wantErr)
			}
			if w.writes != tt.n+1 {
				t.Errorf("%d writes, want %d: Render goes on after a failed write", w.writes, tt.n+1)
			}
		})
	}
	if !strings.Contains(want.String(), fmt.Sprintf("name: operator-%03d\n", packages-1)) {
		t.Errorf("the rendering misses the last package")
	}
}

func TestRenderUnknownFormat(t *testing.T) {
	err := Render(t.Context(), &bytes.Buffer{}, os.DirFS(t.TempDir()), Options{Format: "toml"})
	if err == nil || err.Error() != `unknown format "toml" (want one of yaml, json)` {
		t.Errorf("error = %v", err)
	}
}

func TestGraph(t *testing.T) {
	dir := goldenCatalog(t)
	var out bytes.Buffer
	if err := Graph(t.Context(), &out, os.DirFS(dir), GraphOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "graph.mmd", out.Bytes())
	catalogtest.MustContain(t, out.String(),
		"flowchart LR",
		`pkg_alpha__stable__alpha_v1_0_0 -- replaces --> pkg_alpha__stable__alpha_v1_0_1`,
		`pkg_alpha__stable__alpha_v1_0_0 -. "skipRange #gt;=1.0.0 #lt;1.1.0" .-> pkg_alpha__stable__alpha_v1_1_0`,
		// The head's range is drawn also where a replaces joins the same
		// bundles (a first upgrade: 0.2.0 replaces 0.1.0 and skips it).
		`pkg_zeta__stable__zeta_v0_1_0 -- replaces --> pkg_zeta__stable__zeta_v0_2_0`,
		`pkg_zeta__stable__zeta_v0_1_0 -. "skipRange #gt;=0.1.0 #lt;0.2.0" .-> pkg_zeta__stable__zeta_v0_2_0`,
		"class pkg_alpha__stable__alpha_v1_0_0 deprecated",
		`subgraph pkg_alpha__fast["fast (deprecated)"]`,
	)
}

func TestGraphSVG(t *testing.T) {
	dir := goldenCatalog(t)
	var out bytes.Buffer
	if err := Graph(t.Context(), &out, os.DirFS(dir), GraphOptions{Format: GraphSVG}); err != nil {
		t.Fatal(err)
	}
	golden(t, "graph.svg", out.Bytes())
	// Well-formed XML, with an svg root.
	dec := xml.NewDecoder(bytes.NewReader(out.Bytes()))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	catalogtest.MustContain(t, out.String(),
		"alpha / fast (deprecated)",
		`<title>replaces</title>`,
		`<title>skipRange &gt;=1.0.0 &lt;1.1.0</title>`,
		`fill="#f5d0a9"`,   // a deprecated bundle
		`stroke-width="3"`, // a head
	)
}

func TestGraphUnknownFormat(t *testing.T) {
	err := Graph(t.Context(), &bytes.Buffer{}, os.DirFS(t.TempDir()), GraphOptions{Format: "dot"})
	if err == nil || !strings.Contains(err.Error(), `unknown graph format "dot"`) {
		t.Errorf("error = %v", err)
	}
}
