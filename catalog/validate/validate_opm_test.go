package catalog

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// TestValidateAgreesWithOpm: wherever `opm validate` refuses a catalog,
// Validate reports ErrModel, and where opm accepts it, Validate does not;
// inline bundles included, whose manifests Validate does not decode twice.
func TestValidateAgreesWithOpm(t *testing.T) {
	opm := opmBinary(t)
	inline := filepath.Join(t.TempDir(), "inline")
	for _, v := range []string{"0.1.0", "0.2.0"} {
		if _, err := Add(t.Context(), AddOptions{Dir: inline, BundleDir: writeBundle(t, bundleSpec{pkg: "inline", version: v, channels: "stable"}), InitPackage: true}); err != nil {
			t.Fatal(err)
		}
	}
	stable := declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{e("p.v1.0.0", "", ""), e("p.v1.1.0", "p.v1.0.0", "")}}
	noPackageProperty := testPackage("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	noPackageProperty.Bundles[1].Properties = nil
	noImage := testPackage("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	noImage.Bundles[0].Image = ""
	badGVK := testPackage("p", "stable", []string{"1.0.0", "1.1.0"}, stable)
	badGVK.Bundles[0].Properties = append(badGVK.Bundles[0].Properties, property.Property{Type: property.TypeGVK, Value: []byte(`"not an object"`)})
	badRange := testPackage("p", "stable", []string{"1.0.0", "1.1.0"},
		declcfg.Channel{Name: "stable", Entries: []declcfg.ChannelEntry{e("p.v1.0.0", "", ""), e("p.v1.1.0", "p.v1.0.0", "not a range")}})
	for name, dir := range map[string]string{
		"inline":              inline,
		"images":              writeCatalog(t, testPackage("p", "stable", []string{"1.0.0", "1.1.0"}, stable)),
		"no package property": writeCatalog(t, noPackageProperty),
		"no image":            writeCatalog(t, noImage),
		"bad gvk":             writeCatalog(t, badGVK),
		"bad skipRange":       writeCatalog(t, badRange),
		"missing default":     writeCatalog(t, testPackage("p", "candidate", []string{"1.0.0", "1.1.0"}, stable)),
	} {
		t.Run(name, func(t *testing.T) {
			out, opmErr := exec.CommandContext(t.Context(), opm, "validate", dir).CombinedOutput()
			err := Validate(t.Context(), ValidateOptions{Dir: dir})
			if (opmErr != nil) != errors.Is(err, ErrModel) {
				t.Errorf("opm validate: %v %s\nchartpilot: %v", opmErr, out, err)
			}
		})
	}
}
