package render

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// TestRenderEqualsOpmRender renders catalogs with chartpilot and with
// `opm render` (operator-registry's binary) and wants the same bytes, in
// both formats: image bundles with deprecations and several channels, and
// inline bundles.
func TestRenderEqualsOpmRender(t *testing.T) {
	opm := opmBinary(t)
	inline := filepath.Join(t.TempDir(), "inline")
	for _, v := range []string{"0.1.0", "0.3.0", "0.2.0"} {
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: inline, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "inline", Version: v, Channels: "stable,fast"}), InitPackage: true}); err != nil {
			t.Fatal(err)
		}
	}
	for name, dir := range map[string]string{"images": goldenCatalog(t), "inline": inline} {
		for _, f := range []fbc.Format{fbc.FormatYAML, fbc.FormatJSON} {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				var got bytes.Buffer
				if err := Render(t.Context(), &got, os.DirFS(dir), Options{Format: f}); err != nil {
					t.Fatal(err)
				}
				var stderr bytes.Buffer
				cmd := exec.CommandContext(t.Context(), opm, "render", dir, "-o", string(f))
				cmd.Stderr = &stderr
				want, err := cmd.Output()
				if err != nil {
					t.Fatalf("opm render: %v\n%s", err, stderr.String())
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("chartpilot and opm render differently\nchartpilot:\n%s\nopm:\n%s", got.String(), want)
				}
			})
		}
	}
}

var (
	opmOnce sync.Once
	opmPath string
	opmErr  error
)

// opmBinary returns opm (operator-registry v1.73.0) as the local cluster
// builds it, one of its components (make test builds them before the
// tests); CHARTPILOT_OPM names another opm instead.
func opmBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHARTPILOT_OPM"); p != "" {
		return p
	}
	opmOnce.Do(func() {
		var inst *toolchain.Installation
		inst, opmErr = toolchain.Ensure(context.Background(), toolchain.Options{Out: os.Stderr, Only: []string{"opm"}})
		if opmErr == nil {
			opmPath = inst.Binary("opm")
		}
	})
	if opmErr != nil {
		t.Fatalf("building opm: %v", opmErr)
	}
	return opmPath
}
