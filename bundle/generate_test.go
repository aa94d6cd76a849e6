package bundle

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/validate"
	"github.com/chartpilot/chartpilot/internal/golden"
	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/operator/metricsauth"
	"github.com/chartpilot/chartpilot/scaffold"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixedTime is the createdAt of golden bundles.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newProject scaffolds a project for a test chart of chart/testdata/charts.
func newProject(t testing.TB, chartName string, opts scaffold.Options) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chartName+"-operator")
	if err := initProject(dir, chartName, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

func initProject(dir, chartName string, opts scaffold.Options) error {
	opts.Dir = dir
	opts.Chart = filepath.Join("..", "chart", "testdata", "charts", chartName)
	return scaffold.Init(opts)
}

// generate runs Generate with the test defaults: a fixed builder and the
// controller image set.
func generate(t testing.TB, dir string, opts GenerateOptions) (*GenerateResult, error) {
	t.Helper()
	return Generate(context.Background(), withTestDefaults(dir, opts))
}

func withTestDefaults(dir string, opts GenerateOptions) GenerateOptions {
	opts.Dir = dir
	if opts.Version == "" {
		opts.Version = "0.1.0"
	}
	if opts.Builder == "" {
		opts.Builder = "chartpilot-test"
	}
	if opts.Images == nil {
		opts.Images = map[string]string{"controller": "registry.example.com/op:v" + opts.Version}
	}
	return opts
}

// generatedWebapp is the webapp project as newProject and mustGenerate
// with the test defaults leave it, made once per test binary (a scaffold
// and a generate) for generatedProject to copy; TestMain removes it.
var (
	generatedWebapp = sync.OnceValues(makeGeneratedWebapp)
	fixtureRoot     string
)

func makeGeneratedWebapp() (string, error) {
	root, err := os.MkdirTemp("", "bundle-test-")
	if err != nil {
		return "", err
	}
	fixtureRoot = root
	dir := filepath.Join(root, "webapp-operator")
	if err := initProject(dir, "webapp", scaffold.Options{}); err != nil {
		return "", err
	}
	if _, err := Generate(context.Background(), withTestDefaults(dir, GenerateOptions{})); err != nil {
		return "", err
	}
	return dir, nil
}

// generatedProject is a copy of generatedWebapp of t's own, to change.
func generatedProject(t testing.TB) string {
	t.Helper()
	src, err := generatedWebapp()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

func mustGenerate(t testing.TB, dir string, opts GenerateOptions) *GenerateResult {
	t.Helper()
	res, err := generate(t, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// bundleOutput is what Generate writes: the bundle and bundle.Dockerfile.
func bundleOutput(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for name, data := range golden.Files(t, filepath.Join(dir, "bundle")) {
		files["bundle/"+name] = data
	}
	if data, err := os.ReadFile(filepath.Join(dir, DockerfileName)); err == nil {
		files[DockerfileName] = data
	}
	return files
}

func checkGolden(t *testing.T, name string, files map[string][]byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), files, *update)
}

func TestGenerateGolden(t *testing.T) {
	tests := []struct {
		name  string
		chart string
		init  scaffold.Options
		opts  GenerateOptions
		// edit changes the scaffolded project before generating.
		edit func(t *testing.T, dir string)
	}{{
		name:  "webapp",
		chart: "webapp",
	}, {
		// The monitoring objects once the author enables them.
		name:  "webapp-monitoring",
		chart: "webapp",
		edit: func(t *testing.T, dir string) {
			if err := scaffold.EnableMonitoring(dir); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name:  "umbrella",
		chart: "umbrella",
		init:  scaffold.Options{APIOptions: scaffold.APIOptions{Group: "cache", Version: "v1beta1", Kind: "Stack"}, Domain: "acme.io"},
		opts:  GenerateOptions{Version: "1.2.3", Channels: []string{"stable", "fast"}, DefaultChannel: "stable", Package: "stack"},
	}, {
		name:  "validated",
		chart: "validated",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newProject(t, tt.chart, tt.init)
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			tt.opts.CreatedAt = &fixedTime
			res := mustGenerate(t, dir, tt.opts)
			if res.Unchanged || res.CreatedBase {
				t.Errorf("result = %+v, want a new bundle from the scaffolded base", res)
			}
			rep, err := Validate(ValidateOptions{Dir: filepath.Join(dir, "bundle"), Suites: []string{SuiteAll}})
			if err != nil {
				t.Fatalf("the generated bundle does not validate: %v\n%v", err, rep.Findings)
			}
			checkGolden(t, tt.name, bundleOutput(t, dir))
		})
	}
}

// Same input, same bytes; createdAt moves only when something else does.
func TestGenerateIsReproducible(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Hour); return clock }

	first := mustGenerate(t, dir, GenerateOptions{now: tick})
	before := bundleOutput(t, dir)
	second := mustGenerate(t, dir, GenerateOptions{now: tick})
	if first.Unchanged || !second.Unchanged {
		t.Errorf("unchanged: first %v, second %v; want false, true", first.Unchanged, second.Unchanged)
	}
	after := bundleOutput(t, dir)
	if len(after) != len(before) {
		t.Fatalf("second run wrote %d files, first %d", len(after), len(before))
	}
	for name, data := range before {
		if !bytes.Equal(after[name], data) {
			t.Errorf("%s changed on an identical rerun", name)
		}
	}

	// A real change: the new createdAt is the clock's.
	mustGenerate(t, dir, GenerateOptions{Version: "0.1.1", now: tick})
	csv := readCSV(t, dir)
	if got, want := csv.Annotations[AnnotationCreatedAt], clock.Format(time.RFC3339); got != want {
		t.Errorf("createdAt after a change = %s, want %s", got, want)
	}

	// SOURCE_DATE_EPOCH's fixed time wins.
	mustGenerate(t, dir, GenerateOptions{Version: "0.1.1", CreatedAt: &fixedTime, now: tick})
	if got := readCSV(t, dir).Annotations[AnnotationCreatedAt]; got != fixedTime.Format(time.RFC3339) {
		t.Errorf("createdAt with a fixed time = %s", got)
	}
}

func readCSV(t testing.TB, dir string) *v1alpha1.ClusterServiceVersion {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "bundle", "manifests", "*.clusterserviceversion.yaml"))
	if len(matches) != 1 {
		t.Fatalf("CSV files: %v", matches)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		t.Fatal(err)
	}
	return csv
}

func TestGenerateCSV(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	// The author's base: a display name and a descriptor that win.
	basePath := filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml")
	base, err := os.ReadFile(basePath)
	if err != nil {
		t.Fatal(err)
	}
	base = bytes.Replace(base, []byte("      displayName: Webapp\n"), []byte("      displayName: Web Application\n      specDescriptors:\n      - path: replicaCount\n        displayName: Pods\n"), 1)
	if err := os.WriteFile(basePath, base, 0o644); err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, dir, GenerateOptions{Images: map[string]string{"controller": "registry.example.com/op:v1"}})
	csv := readCSV(t, dir)

	spec := csv.Spec.InstallStrategy.StrategySpec
	if csv.Spec.InstallStrategy.StrategyName != "deployment" || len(spec.DeploymentSpecs) != 1 {
		t.Fatalf("install strategy: %+v", csv.Spec.InstallStrategy)
	}
	d := spec.DeploymentSpecs[0]
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example.com/op:v1" || csv.Annotations[AnnotationContainerImage] != c.Image {
		t.Errorf("image %q, containerImage %q", c.Image, csv.Annotations[AnnotationContainerImage])
	}
	if len(c.Env) == 0 || c.Env[0].Name != "WATCH_NAMESPACE" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
		t.Errorf("WATCH_NAMESPACE = %+v", c.Env)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("the manager's root file system is not read-only: %+v", sc)
	}
	// Namespaced rules are permissions (OLM grants them in the install
	// mode's namespaces), cluster-scoped ones clusterPermissions: the
	// reviews of the secure metrics endpoint's scrapers (webapp makes no
	// claim: no snapshot API).
	sa := d.Spec.Template.Spec.ServiceAccountName
	if len(spec.ClusterPermissions) != 1 || spec.ClusterPermissions[0].ServiceAccountName != sa || len(spec.Permissions) != 1 || spec.Permissions[0].ServiceAccountName != sa {
		t.Fatalf("permissions %+v, cluster permissions for %q: %+v", spec.Permissions, sa, spec.ClusterPermissions)
	}
	resources := func(rules []rbacv1.PolicyRule) []string {
		var out []string
		for _, r := range rules {
			out = append(out, r.Resources...)
		}
		slices.Sort(out)
		return out
	}
	if got, want := resources(spec.ClusterPermissions[0].Rules), []string{"subjectaccessreviews", "tokenreviews"}; !slices.Equal(got, want) {
		t.Errorf("clusterPermissions on %q, want %q", got, want)
	}
	for _, want := range []string{"secrets", "pods", "deployments", "webapps", "leases"} {
		if !slices.Contains(resources(spec.Permissions[0].Rules), want) {
			t.Errorf("permissions lack %s: %q", want, resources(spec.Permissions[0].Rules))
		}
	}
	// webapp's pods carry no backup hook.
	if slices.Contains(resources(spec.Permissions[0].Rules), "pods/exec") || strings.Contains(csv.Spec.Description, extrasHeading) {
		t.Errorf("pods/exec granted or described for a chart without hooks: %q", csv.Spec.Description)
	}
	// The API's CRD, then its backups', restores', backup schedules' and restore grants' (operator/backup/api).
	// Each lists resources: OLM's olm-crds-have-resources test fails any that lists none.
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if len(d.Resources) == 0 {
			t.Errorf("owned CRD %s lists no resources", d.Name)
		}
	}
	owned := slices.Clone(csv.Spec.CustomResourceDefinitions.Owned)
	owned = slices.DeleteFunc(owned, func(d v1alpha1.CRDDescription) bool { return d.Kind != "Webapp" })
	if len(csv.Spec.CustomResourceDefinitions.Owned) != 5 || len(owned) != 1 || owned[0].DisplayName != "Web Application" || len(owned[0].Resources) == 0 {
		t.Fatalf("owned: %+v", csv.Spec.CustomResourceDefinitions.Owned)
	}
	var pods, ratio bool
	for _, sd := range owned[0].SpecDescriptors {
		pods = pods || sd.Path == "replicaCount" && sd.DisplayName == "Pods"
		ratio = ratio || sd.Path == "ratio" && sd.DisplayName == "Ratio"
	}
	if !pods || !ratio {
		t.Errorf("spec descriptors keep the base's and add derived ones: %+v", owned[0].SpecDescriptors)
	}
	// The operator's image and the operand's (the chart's default values).
	want := []v1alpha1.RelatedImage{{Name: "app", Image: "registry.k8s.io/pause:1.27.0"}, {Name: "manager", Image: "registry.example.com/op:v1"}}
	if !slices.Equal(csv.Spec.RelatedImages, want) || csv.Spec.MinKubeVersion == "" {
		t.Errorf("relatedImages %+v, want %+v; minKubeVersion %q", csv.Spec.RelatedImages, want, csv.Spec.MinKubeVersion)
	}
	// The RBAC bound to the operator is in the CSV, not in the bundle; the
	// ClusterRole of the metrics' scrapers, which OLM installs for their
	// bindings, is.
	manifests := golden.Files(t, filepath.Join(dir, "bundle", "manifests"))
	reader := false
	for name, data := range manifests {
		if strings.Contains(name, "manager-role") || strings.Contains(name, "serviceaccount") || strings.Contains(name, "all-namespaces") {
			t.Errorf("bundle carries %s, which the CSV already grants", name)
		}
		if strings.Contains(name, metricsauth.ReaderRole) {
			var cr rbacv1.ClusterRole
			if err := yaml.Unmarshal(data, &cr); err != nil {
				t.Fatal(err)
			}
			reader = cr.Kind == "ClusterRole" && reflect.DeepEqual(cr.Rules, metricsauth.ReaderRules())
		}
	}
	if !reader {
		t.Errorf("the bundle lacks the %s ClusterRole of the metrics' scrapers: %q", metricsauth.ReaderRole, slices.Sorted(maps.Keys(manifests)))
	}
}

// The image given wins over one an images entry of config/manager set with
// `kustomize edit set image`, in the deployment, containerImage and
// relatedImages alike.
func TestGenerateImageWinsOverImagesEntry(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	path := filepath.Join(dir, "config", "manager", "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(data, []byte("newName: controller\n  newTag: latest"), []byte("newName: quay.io/old/op\n  newTag: v0.0.1"), 1)
	if bytes.Equal(edited, data) {
		t.Fatalf("%s has no images entry for controller:\n%s", path, data)
	}
	if err := os.WriteFile(path, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		images map[string]string
		want   string
	}{
		{name: "no image given", images: map[string]string{}, want: "quay.io/old/op:v0.0.1"},
		{name: "IMG", images: map[string]string{"controller": "example.com/op:v1"}, want: "example.com/op:v1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustGenerate(t, dir, GenerateOptions{Images: tt.images})
			csv := readCSV(t, dir)
			c := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
			if c.Image != tt.want || csv.Annotations[AnnotationContainerImage] != tt.want {
				t.Errorf("image %q, containerImage %q, want %q", c.Image, csv.Annotations[AnnotationContainerImage], tt.want)
			}
			var related []string
			for _, r := range csv.Spec.RelatedImages {
				related = append(related, r.Image)
			}
			if !slices.Contains(related, tt.want) || slices.Contains(related, "quay.io/old/op:v0.0.1") != (tt.want == "quay.io/old/op:v0.0.1") {
				t.Errorf("relatedImages %q, want %q and not the other", related, tt.want)
			}
		})
	}
}

// Without a base CSV, Generate writes one with defaults for the author.
func TestGenerateCreatesBase(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	basePath := filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml")
	if err := os.Remove(basePath); err != nil {
		t.Fatal(err)
	}
	res := mustGenerate(t, dir, GenerateOptions{})
	if !res.CreatedBase {
		t.Error("CreatedBase is false")
	}
	if _, err := os.Stat(basePath); err != nil {
		t.Fatal(err)
	}
	csv := readCSV(t, dir)
	if csv.Spec.Description == "" || len(csv.Spec.InstallModes) != 4 || len(csv.Spec.CustomResourceDefinitions.Owned) != 5 {
		t.Errorf("CSV from a new base: %+v", csv.Spec)
	}
}

func TestGenerateFromCatalog(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	cat := filepath.Join(t.TempDir(), "catalog")
	for i, v := range []string{"0.1.0", "0.1.1", "0.3.0"} {
		mustGenerate(t, dir, GenerateOptions{Version: v})
		if i == 0 {
			if err := edit.Init(t.Context(), edit.InitOptions{Dir: cat, FromBundle: filepath.Join(dir, "bundle")}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: cat, BundleDir: filepath.Join(dir, "bundle")}); err != nil {
			t.Fatal(err)
		}
	}
	res := mustGenerate(t, dir, GenerateOptions{Version: "0.2.0", FromCatalog: cat})
	if res.Replaces != "webapp-operator.v0.1.1" || res.SkipRange != ">=0.1.0 <0.2.0" {
		t.Errorf("replaces %q, skipRange %q", res.Replaces, res.SkipRange)
	}
	csv := readCSV(t, dir)
	if csv.Spec.Replaces != res.Replaces || csv.Annotations[AnnotationSkipRange] != res.SkipRange {
		t.Errorf("CSV replaces %q, skipRange %q", csv.Spec.Replaces, csv.Annotations[AnnotationSkipRange])
	}
	// --replaces wins.
	res = mustGenerate(t, dir, GenerateOptions{Version: "0.2.0", FromCatalog: cat, Replaces: "webapp-operator.v0.1.0"})
	if res.Replaces != "webapp-operator.v0.1.0" || res.SkipRange != "" {
		t.Errorf("with --replaces: replaces %q, skipRange %q", res.Replaces, res.SkipRange)
	}
}

// The generated bundle is what OLM installs from an inline catalog: it
// loads as an olm.bundle with its objects, and the catalog validates.
func TestGeneratedBundleInInlineCatalog(t *testing.T) {
	dir := generatedProject(t)
	b, err := bundledir.Load(os.DirFS(filepath.Join(dir, "bundle")), bundledir.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "webapp-operator.v0.1.0" || b.Declcfg.Image != "" || len(b.Channels) != 1 {
		t.Errorf("bundle %s image %q channels %v", b.Name, b.Declcfg.Image, b.Channels)
	}
	objects := 0
	for _, p := range b.Declcfg.Properties {
		if p.Type == "olm.bundle.object" {
			objects++
		}
	}
	if want := len(golden.Files(t, filepath.Join(dir, "bundle", "manifests"))); objects != want {
		t.Errorf("%d olm.bundle.object properties, want one per manifest (%d)", objects, want)
	}
	cat := filepath.Join(t.TempDir(), "catalog")
	if err := edit.Init(t.Context(), edit.InitOptions{Dir: cat, FromBundle: filepath.Join(dir, "bundle")}); err != nil {
		t.Fatal(err)
	}
	if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: cat, BundleDir: filepath.Join(dir, "bundle")}); err != nil {
		t.Fatal(err)
	}
	if err := validate.FS(context.Background(), cat, os.DirFS(cat)); err != nil {
		t.Fatal(err)
	}
}

// Bad input: a clear error, and the bundle on disk left as it was.
func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name string
		// edit breaks the project
		edit    func(t *testing.T, dir string)
		opts    GenerateOptions
		wantErr error
		want    string
	}{{
		name:    "version not semver",
		opts:    GenerateOptions{Version: "v1.0"},
		wantErr: ErrInvalidVersion,
		want:    `--version: version "v1.0" is not semver: it starts with a v; want MAJOR.MINOR.PATCH`,
	}, {
		name:    "version with two numbers: the rule catalog add applies to the CSV",
		opts:    GenerateOptions{Version: "1.0"},
		wantErr: ErrInvalidVersion,
		want:    `--version: version "1.0" is not semver: it has 2 number(s) where three are wanted; want ` + registryv1.VersionRule,
	}, {
		name: "default channel outside the channels",
		opts: GenerateOptions{Channels: []string{"stable"}, DefaultChannel: "fast"},
		want: `--default-channel "fast" is not one of --channels stable`,
	}, {
		name: "a channel name with a space: the rule catalog add applies",
		opts: GenerateOptions{Channels: []string{"stable", "Stable Channel"}},
		want: `--channels: invalid channel name "Stable Channel": a lowercase RFC 1123 subdomain`,
	}, {
		name: "an upper-case default channel",
		opts: GenerateOptions{DefaultChannel: "Fast"},
		want: `--default-channel: invalid channel name "Fast"`,
	}, {
		name: "a package name that is not a label",
		opts: GenerateOptions{Package: "My_Operator"},
		want: `--package: invalid package name "My_Operator"`,
	}, {
		name: "a project name that is not a package name",
		edit: func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "PROJECT"), "projectName: webapp-operator", "projectName: WebApp")
		},
		want: `the package name is the project's name (PROJECT projectName) unless --package gives one: invalid package name "WebApp"`,
	}, {
		name: "sample of a kind no CRD owns",
		edit: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "config", "samples", "other.yaml"), "apiVersion: charts.example.com/v1alpha1\nkind: Other\nmetadata:\n  name: other\n")
			appendFile(t, filepath.Join(dir, "config", "samples", "kustomization.yaml"), "- other.yaml\n")
		},
		wantErr: ErrOrphanSample,
		want:    "config/samples: Other other (charts.example.com/v1alpha1)",
	}, {
		name: "declared capability level not proven",
		edit: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml")
			replaceInFile(t, p, "capabilities: Basic Install", "capabilities: Deep Insights")
		},
		wantErr: ErrCapabilityNotProven,
		want:    `the base CSV declares "Deep Insights", the evidence proves "none" (Basic Install lacks: a CR installs the operand`,
	}, {
		name:    "no PROJECT file",
		edit:    func(t *testing.T, dir string) { removeFile(t, filepath.Join(dir, "PROJECT")) },
		wantErr: fs.ErrNotExist,
		want:    "reading the project",
	}, {
		name: "no manager deployment",
		edit: func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "config", "default", "kustomization.yaml"), "- ../manager\n", "")
		},
		wantErr: ErrNoDeployment,
		want:    "renders no apps/v1 Deployment",
	}, {
		name: "kustomize error names the file",
		edit: func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, "config", "manifests", "kustomization.yaml"), "- ../missing\n")
		},
		want: "kustomize build",
	}, {
		name: "scorecard results that are not a TestList",
		edit: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "results.json"), `{"kind": "Configuration"}`)
		},
		opts:    GenerateOptions{ScorecardResults: "results.json"},
		want:    `kind "Configuration", want TestList`,
		wantErr: nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := generatedProject(t)
			before := bundleOutput(t, dir)
			if tt.edit != nil {
				tt.edit(t, dir)
			}
			if tt.opts.ScorecardResults != "" {
				tt.opts.ScorecardResults = filepath.Join(dir, tt.opts.ScorecardResults)
			}
			_, err := generate(t, dir, tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
			after := bundleOutput(t, dir)
			if len(after) != len(before) {
				t.Errorf("the bundle changed: %d files, was %d", len(after), len(before))
			}
			for name, data := range before {
				if !bytes.Equal(after[name], data) {
					t.Errorf("%s changed after a failed generate", name)
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, ".bundle.*"))
			if len(leftovers) > 0 {
				t.Errorf("left behind: %v", leftovers)
			}
		})
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, p, content string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, string(data)+content)
}

func replaceInFile(t *testing.T, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s lacks %q", p, old)
	}
	writeFile(t, p, strings.Replace(string(data), old, new, 1))
}

func removeFile(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

// The bundle directory is built aside and renamed into place with the mode
// mkdir gives a directory (0o777 less the umask).
func TestWriteTreeMode(t *testing.T) {
	parent := t.TempDir()
	ref := filepath.Join(parent, "ref")
	if err := os.Mkdir(ref, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "bundle")
	if err := writeTree(dir, map[string][]byte{"metadata/annotations.yaml": []byte("annotations: {}\n")}); err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("bundle directory mode %v, want %v (what mkdir makes)", got.Mode().Perm(), want.Mode().Perm())
	}
}

// The base CSV's spec.version is not read: the bundle's version is
// --version's, and a stale or invalid one in the base cannot fail the
// generation with a message about a version that is not used.
func TestGenerateIgnoresTheBaseVersion(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	base := filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml")
	replaceInFile(t, base, "  version: 0.0.0\n", "  version: 0latest\n")
	res := mustGenerate(t, dir, GenerateOptions{Version: "0.2.0"})
	if got := readCSV(t, dir).Spec.Version.String(); got != "0.2.0" {
		t.Errorf("CSV version %s, want 0.2.0", got)
	}
	want := "the base CSV's spec.version 0latest is not used: the bundle's version is --version 0.2.0"
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("warnings %q lack %q", res.Warnings, want)
	}
}
