package validate_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// TestValidateAgreesWithOpm: wherever `opm validate` refuses a catalog,
// Validate reports ErrModel, and where opm accepts it, Validate does not;
// inline bundles included, whose manifests Validate does not decode twice.
func TestValidateAgreesWithOpm(t *testing.T) {
	opm := opmBinary(t)
	inline := filepath.Join(t.TempDir(), "inline")
	for _, v := range []string{"0.1.0", "0.2.0"} {
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: inline, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "inline", Version: v, Channels: "stable"}), InitPackage: true}); err != nil {
			t.Fatal(err)
		}
	}
	stable := declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{catalogtest.Entry("p.v1.0.0", "", ""), catalogtest.Entry("p.v1.1.0", "p.v1.0.0", "")}}
	noPackageProperty := catalogtest.Package("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	noPackageProperty.Bundles[1].Properties = nil
	noImage := catalogtest.Package("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	noImage.Bundles[0].Image = ""
	badGVK := catalogtest.Package("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	badGVK.Bundles[0].Properties = append(badGVK.Bundles[0].Properties, property.Property{Type: property.TypeGVK, Value: []byte(`"not an object"`)})
	badRange := catalogtest.Package("p", "stable", []string{"1.0.0", "1.1.0"},
		declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{catalogtest.Entry("p.v1.0.0", "", ""), catalogtest.Entry("p.v1.1.0", "p.v1.0.0", "not a range")}})
	for name, dir := range map[string]string{
		"inline":              inline,
		"images":              catalogtest.WriteCatalog(t, catalogtest.Package("p", "stable", []string{"1.0.0", "1.1.0"}, stable)),
		"no package property": catalogtest.WriteCatalog(t, noPackageProperty),
		"no image":            catalogtest.WriteCatalog(t, noImage),
		"bad gvk":             catalogtest.WriteCatalog(t, badGVK),
		"bad skipRange":       catalogtest.WriteCatalog(t, badRange),
		"missing default":     catalogtest.WriteCatalog(t, catalogtest.Package("p", "candidate", []string{"1.0.0", "1.1.0"}, stable)),
	} {
		t.Run(name, func(t *testing.T) {
			out, opmErr := exec.CommandContext(t.Context(), opm, "validate", dir).CombinedOutput()
			err := validate.FS(t.Context(), dir, os.DirFS(dir))
			if (opmErr != nil) != errors.Is(err, validate.ErrModel) {
				t.Errorf("opm validate: %v %s\nchartpilot: %v", opmErr, out, err)
			}
		})
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
