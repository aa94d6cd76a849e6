package extension_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/catalog"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// A deprecation chartpilot catalog deprecate writes reaches the
// ClusterExtension as operator-controller's conditions, which olm v1
// status and doctor explain with the way off.
func TestDeprecationSeen(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	reg := olmtest.Registry(t)
	b := olmtest.Bundle{Package: "v1old", Version: "0.1.0"}
	dir, ref := olmtest.PushBundle(t, reg, b, nil)
	cat := olmtest.WriteCatalog(t, false, olmtest.ImageBundle{Dir: dir, Ref: ref})
	const message = "v0.1.0 loses data on upgrade: use 0.2.0"
	if err := catalog.Deprecate(catalog.DeprecateOptions{Dir: cat, Package: b.Package, Bundle: b.Version, Message: message}); err != nil {
		t.Fatal(err)
	}
	image := olmtest.PushCatalogDir(t, reg+"/"+b.Package+"-catalog:1", cat)

	ns := fmt.Sprintf("%s-%d", b.Package, time.Now().UnixNano()%100000)
	if _, err := extension.Install(ctx, c, extension.InstallOptions{Package: b.Package, Namespace: ns, CatalogImage: image}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uninstallQuietly(c, b.Package) })
	// Installed, and deprecated: the deprecation warns, it does not block.
	r, err := extension.Wait(ctx, c, b.Package, extension.WaitOptions{Timeout: 3 * time.Minute})
	if err != nil {
		t.Fatalf("%v\n%s", err, reportText(r))
	}
	deps := r.Deprecations()
	if len(deps) != 1 || deps[0].Type != extension.TypeBundleDeprecated || !strings.Contains(deps[0].Message, message) ||
		!strings.Contains(deps[0].Meaning, "chartpilot olm v1 upgrade "+b.Package+" --version") {
		t.Fatalf("deprecations %+v, want BundleDeprecated with the catalog's message and the way off", deps)
	}

	out, _, err := chartpilot(t, "olm", "v1", "status", b.Package)
	if err != nil || !strings.Contains(out, "BundleDeprecated=True") || !strings.Contains(out, message) || !strings.Contains(out, "--version VERSION") {
		t.Errorf("olm v1 status (err %v) does not explain the deprecation:\n%s", err, out)
	}
	rep := doctorReport(t, "--extension", b.Package)
	if !slices.ContainsFunc(rep.Checks, func(ch doctor.Check) bool {
		return ch.Severity == doctor.Warn && strings.Contains(ch.Message, message) && strings.Contains(ch.Fix, "--version VERSION")
	}) {
		t.Errorf("doctor --extension %s gives no warning of the deprecation: %+v", b.Package, rep.Checks)
	}
}
