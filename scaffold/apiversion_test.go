package scaffold

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/watches"
)

// shopChart is a release of the apiversion test chart (testdata/charts/apiversion).
func shopChart(release string) string {
	return filepath.Join("testdata", "charts", "apiversion", release)
}

// initShop scaffolds a project from the shop chart v0.1.0.
func initShop(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shop-operator")
	if err := Init(Options{APIOptions: APIOptions{Chart: shopChart("v0.1.0")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// upgradeChart replaces the project's vendored shop chart with a release,
// as an author does before regenerating.
func upgradeChart(t *testing.T, dir, release string) {
	t.Helper()
	dst := filepath.Join(dir, "helm-charts", "shop")
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(shopChart(release))); err != nil {
		t.Fatal(err)
	}
}

const shopCRD = "config/crd/bases/charts.example.com_shops.yaml"

func readProjectCRD(t *testing.T, dir, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

// versions are a CRD's versions as "name" or "name*" for the storage one,
// and its conversion strategy.
func versions(crd *apiextensionsv1.CustomResourceDefinition) (names []string, conversion string) {
	for _, v := range crd.Spec.Versions {
		n := v.Name
		if v.Storage {
			n += "*"
		}
		if !v.Served {
			n += "(unserved)"
		}
		names = append(names, n)
	}
	if crd.Spec.Conversion != nil {
		conversion = string(crd.Spec.Conversion.Strategy)
	}
	return names, conversion
}

func specProps(v apiextensionsv1.CustomResourceDefinitionVersion) []string {
	return slices.Sorted(maps.Keys(v.Schema.OpenAPIV3Schema.Properties["spec"].Properties))
}

// A new API version of an existing kind: each chart release that changes
// the values compatibly gets one; each that would read the CRs of the old
// version differently is refused with the path, and leaves the project as
// it was.
func TestCreateAPIVersion(t *testing.T) {
	tests := []struct {
		release string
		// refused names the incompatible path and rule, "" when accepted.
		refused string
	}{
		{release: "v0.1.0"},
		{release: "v0.2.0-field-added"},
		{release: "v0.2.0-field-removed", refused: "spec.legacy: existingFieldRemoval"},
		{release: "v0.2.0-type-changed", refused: "spec.size: type: type changed from integer to any type"},
		// crdschema writes a values.schema.json enum as a pattern.
		{release: "v0.2.0-enum-narrowed", refused: "spec.color: unhandled: changed: pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.release, func(t *testing.T) {
			dir := initShop(t)
			// The values given to init are recorded per version and move.
			if err := Generate(GenerateOptions{Dir: dir, Values: map[string]any{"size": 2}}); err != nil {
				t.Fatal(err)
			}
			upgradeChart(t, dir, tt.release)
			before := projectFiles(t, dir)
			var out bytes.Buffer
			err := CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Version: "v1beta1", Kind: "Shop"}, Dir: dir, Out: &out})
			if tt.refused != "" {
				if !errors.Is(err, ErrIncompatibleVersion) || !strings.Contains(err.Error(), "charts.example.com v1alpha1 -> v1beta1 "+tt.refused) {
					t.Fatalf("create api --version v1beta1: %v\nwant ErrIncompatibleVersion naming %q", err, tt.refused)
				}
				if after := projectFiles(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
					t.Error("a refused create api changed the project")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkProject(t, dir)
			checkTwoVersions(t, dir, tt.release, true)
		})
	}
}

// checkTwoVersions checks a project whose kind Shop gained v1beta1.
// recorded says the test recorded values (size 2) for the kind.
func checkTwoVersions(t *testing.T, dir, release string, recorded bool) {
	t.Helper()
	crd := readProjectCRD(t, dir, shopCRD)
	if names, conv := versions(crd); !slices.Equal(names, []string{"v1alpha1", "v1beta1*"}) || conv != "None" {
		t.Errorf("CRD versions %v, conversion %q; want [v1alpha1 v1beta1*], None", names, conv)
	}
	// v1alpha1 keeps the schema it was published with; v1beta1 is the chart's.
	if got := specProps(crd.Spec.Versions[0]); !slices.Equal(got, []string{"autoscaling", "color", "legacy", "size"}) {
		t.Errorf("v1alpha1 spec fields %v", got)
	}
	want := []string{"autoscaling", "color", "legacy", "size"}
	if release == "v0.2.0-field-added" {
		want = []string{"autoscaling", "color", "legacy", "shape", "size"}
	}
	if got := specProps(crd.Spec.Versions[1]); !slices.Equal(got, want) {
		t.Errorf("v1beta1 spec fields %v, want %v", got, want)
	}
	ws, err := LoadWatches(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Version != "v1beta1" || ws[0].Kind != "Shop" {
		t.Errorf("watches %+v, want one on v1beta1", ws)
	}
	proj, err := LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pv []string
	for _, r := range proj.Resources {
		pv = append(pv, r.Kind+"/"+r.Version)
	}
	if !slices.Equal(pv, []string{"Shop/v1alpha1", "Shop/v1beta1"}) {
		t.Errorf("PROJECT resources %v", pv)
	}
	sample, err := os.ReadFile(filepath.Join(dir, "config/samples/charts.example.com_v1beta1_shop.yaml"))
	if err != nil || !bytes.HasPrefix(sample, []byte("apiVersion: charts.example.com/v1beta1\nkind: Shop\n")) {
		t.Errorf("the v1beta1 sample: %v\n%s", err, sample)
	}
	samples, _ := os.ReadFile(filepath.Join(dir, "config/samples/kustomization.yaml"))
	if !bytes.Contains(samples, []byte("- charts.example.com_v1beta1_shop.yaml")) {
		t.Errorf("config/samples/kustomization.yaml does not list the v1beta1 sample:\n%s", samples)
	}
	// The values recorded for the kind moved with its watch.
	w := watches.Watch{Group: "charts.example.com", Version: "v1beta1", Kind: "Shop"}
	if vals, err := readValues(dir, w); recorded && (err != nil || vals["size"] != float64(2)) {
		t.Errorf("values of v1beta1: %v, %v; want size 2", vals, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ValuesFile(watches.Watch{Group: w.Group, Version: "v1alpha1", Kind: "Shop"}))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the v1alpha1 values file is still there: %v", err)
	}
	// The backup kinds follow the kind's versions: both, the same schema.
	backup := readProjectCRD(t, dir, "config/crd/bases/charts.example.com_shopbackups.yaml")
	if names, conv := versions(backup); !slices.Equal(names, []string{"v1alpha1", "v1beta1*"}) || conv != "None" {
		t.Errorf("backup CRD versions %v, conversion %q", names, conv)
	}
	// The operator may migrate the storage of exactly these CRDs: not the
	// restore grants', which it must never write.
	role, _ := os.ReadFile(filepath.Join(dir, RoleFile))
	for _, want := range []string{"customresourcedefinitions/status", "- shops.charts.example.com", "- shopbackups.charts.example.com", "- shoprestores.charts.example.com", "- shopbackupschedules.charts.example.com"} {
		if !bytes.Contains(role, []byte(want)) {
			t.Errorf("role.yaml lacks %q", want)
		}
	}
	if bytes.Contains(role, []byte("- shoprestoregrants.charts.example.com")) {
		t.Error("role.yaml lets the operator migrate (rewrite) the restore grants")
	}
}

// generate keeps every version PROJECT lists: the old ones as they were
// published, the storage one from the chart. A chart change the old
// version cannot read is refused; a version dropped from PROJECT leaves
// the CRD (and the migration's rules).
func TestGenerateKeepsVersions(t *testing.T) {
	dir := initShop(t)
	if err := CreateAPI(CreateAPIOptions{APIOptions: APIOptions{Version: "v1beta1"}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	// A value added: v1beta1 gains it, v1alpha1 stays.
	upgradeChart(t, dir, "v0.2.0-field-added")
	if err := Generate(GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	checkProject(t, dir)
	checkTwoVersions(t, dir, "v0.2.0-field-added", false)

	// A value removed: v1alpha1 CRs would lose it when read in v1beta1.
	upgradeChart(t, dir, "v0.2.0-field-removed")
	before := projectFiles(t, dir)
	err := Generate(GenerateOptions{Dir: dir})
	if !errors.Is(err, ErrIncompatibleVersion) || !strings.Contains(err.Error(), "v1alpha1 -> v1beta1 spec.legacy: existingFieldRemoval") {
		t.Fatalf("generate with a field removed: %v, want ErrIncompatibleVersion naming spec.legacy", err)
	}
	if after := projectFiles(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Error("a refused generate changed the project")
	}

	// The old version dropped from PROJECT: generate drops it from the CRDs.
	upgradeChart(t, dir, "v0.2.0-field-added")
	dropProjectVersion(t, dir, "v1alpha1")
	var out bytes.Buffer
	if err := Generate(GenerateOptions{Dir: dir, Out: &out}); err != nil {
		t.Fatal(err)
	}
	checkProject(t, dir)
	for _, path := range []string{shopCRD, "config/crd/bases/charts.example.com_shopbackups.yaml"} {
		if names, conv := versions(readProjectCRD(t, dir, path)); !slices.Equal(names, []string{"v1beta1*"}) || conv != "" {
			t.Errorf("%s: versions after dropping v1alpha1: %v, conversion %q", path, names, conv)
		}
	}
	if !strings.Contains(out.String(), "version v1alpha1 dropped (PROJECT no longer lists it)") {
		t.Errorf("generate did not say it dropped v1alpha1:\n%s", out.String())
	}
	role, _ := os.ReadFile(filepath.Join(dir, RoleFile))
	if bytes.Contains(role, []byte("customresourcedefinitions/status")) {
		t.Error("role.yaml still grants the storage migration with one version left")
	}
}

// The refusals of create api without a chart.
func TestCreateAPIVersionRefusals(t *testing.T) {
	dir := initShop(t)
	tests := []struct {
		name string
		opts APIOptions
		want error
		msg  string
	}{
		{name: "the version it has", opts: APIOptions{Version: "v1alpha1", Kind: "Shop"}, want: ErrAPIExists},
		{name: "a chart for a kind it has", opts: APIOptions{Chart: shopChart("v0.1.0"), Version: "v1beta1", Kind: "Shop"}, want: ErrAPIExists, msg: "leave out --chart"},
		{name: "no chart, an unknown kind", opts: APIOptions{Version: "v1beta1", Kind: "Other"}, msg: "no chart (--chart)"},
		{name: "a bad version", opts: APIOptions{Version: "beta", Kind: "Shop"}, msg: `version "beta" is not a Kubernetes API version`},
		{name: "values", opts: APIOptions{Version: "v1beta1", Kind: "Shop", Values: map[string]any{"size": 3}}, msg: "chartpilot generate --kind Shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CreateAPI(CreateAPIOptions{APIOptions: tt.opts, Dir: dir})
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("CreateAPI(%+v) = %v, want %v with %q", tt.opts, err, tt.want, tt.msg)
			}
		})
	}
}
