package scaffold

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/internal/golden"
)

// The CRDs chartpilot generates from the shop chart's releases, paired as
// an upgrade publishes them, are CRD pairs of crddiff's tests
// (crddiff/testdata/chart-*): its differential test feeds each to OLM v1's
// own check (crdify) and requires the same verdict, and its TestCompare
// names each change. This test keeps those files what the scaffold writes
// (-update rewrites them).
func TestChartPairsForOLMv1(t *testing.T) {
	v1 := readProjectCRD(t, initShop(t), shopCRD)
	pairs := map[string][2]*apiextensionsv1.CustomResourceDefinition{}

	// The same version, the values changed.
	for _, change := range []string{"field-added", "field-removed", "type-changed", "enum-narrowed"} {
		pairs["chart-"+change] = [2]*apiextensionsv1.CustomResourceDefinition{v1, shopCRDOf(t, "v0.2.0-"+change, "v1alpha1")}
	}

	// A new version (create api --version) with a value added.
	dir := initShop(t)
	upgradeChart(t, dir, "v0.2.0-field-added")
	if err := CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Version: "v1beta1"}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	v2 := readProjectCRD(t, dir, shopCRD)
	pairs["chart-version-added"] = [2]*apiextensionsv1.CustomResourceDefinition{v1, v2}

	// A new version without a value, which create api refuses: the CRD it
	// would have written.
	gen := shopCRDOf(t, "v0.2.0-field-removed", "v1beta1")
	pairs["chart-version-added-field-removed"] = [2]*apiextensionsv1.CustomResourceDefinition{v1, withStorageVersion(v1, gen.Spec.Versions[0])}

	// The old version dropped (PROJECT, generate), judged against the
	// cluster's CRD before and after its CRs were migrated.
	dropProjectVersion(t, dir, "v1alpha1")
	if err := Generate(GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	v3 := readProjectCRD(t, dir, shopCRD)
	for name, stored := range map[string][]string{
		"chart-version-dropped-before-migration": {"v1alpha1", "v1beta1"},
		"chart-version-dropped-after-migration":  {"v1beta1"},
	} {
		live := v2.DeepCopy()
		live.Status = apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored}
		pairs[name] = [2]*apiextensionsv1.CustomResourceDefinition{live, v3}
	}

	for name, p := range pairs {
		files := map[string][]byte{}
		for i, file := range []string{"old.yaml", "new.yaml"} {
			data, err := yaml.Marshal(p[i])
			if err != nil {
				t.Fatal(err)
			}
			files[file] = data
		}
		golden.Check(t, filepath.Join("..", "crddiff", "testdata", name), files, *update)
	}
}

// shopCRDOf is the CRD the scaffold generates from a release of the shop
// chart, for one version.
func shopCRDOf(t *testing.T, release, version string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	c, err := chart.Load(shopChart(release))
	if err != nil {
		t.Fatal(err)
	}
	crd, _, err := crdschema.CRD(c, crdschema.Options{Group: "charts.example.com", Version: version, Kind: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// dropProjectVersion removes a version of the project's kind from PROJECT.
func dropProjectVersion(t *testing.T, dir, version string) {
	t.Helper()
	proj, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	proj.Resources = slices.DeleteFunc(proj.Resources, func(r Resource) bool { return r.Version == version })
	data, err := yaml.Marshal(proj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ProjectFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
