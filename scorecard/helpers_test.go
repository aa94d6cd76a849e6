package scorecard

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// fixture is a registry+v1 bundle of the "validated" chart's operator
// (testdata/project-v1), passing every test until a test changes it.
type fixture struct {
	csv *v1alpha1.ClusterServiceVersion
	crd *apiextensionsv1.CustomResourceDefinition
	// examples become the CSV's alm-examples.
	examples    []map[string]any
	annotations map[string]string
	// config, if set, is written as tests/scorecard/config.yaml.
	config string
	// objects are more manifests, by file name under manifests/.
	objects map[string]any
	// projectFiles are files of the project (inProject), by path.
	projectFiles map[string]any
}

const operatorSA = "validated-operator-controller-manager"

// operatorRules are what the validated chart's operator needs, as
// chartpilot's scaffolding derives them (config/rbac/role.yaml).
func operatorRules() []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: all},
		{APIGroups: []string{"charts.example.com"}, Resources: []string{"validateds"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"charts.example.com"}, Resources: []string{"validateds/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{"charts.example.com"}, Resources: []string{"validateds/status"}, Verbs: []string{"get", "update", "patch"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}
}

func newFixture(t testing.TB, v string) *fixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	replicas := int32(1)
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        "validated-operator.v" + v,
			Annotations: map[string]string{"capabilities": "Basic Install", "categories": "Developer Tools"},
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:    "Validated Operator",
			Description:    "Runs the validated Helm chart.",
			Version:        version.OperatorVersion{Version: semver.MustParse(v)},
			Maturity:       "alpha",
			Provider:       v1alpha1.AppLink{Name: "example.com"},
			Maintainers:    []v1alpha1.Maintainer{{Name: "team", Email: "team@example.com"}},
			Keywords:       []string{"validated"},
			Links:          []v1alpha1.AppLink{{Name: "docs", URL: "https://validated.example.com"}},
			MinKubeVersion: "1.30.0",
			InstallModes: []v1alpha1.InstallMode{
				{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{Owned: []v1alpha1.CRDDescription{{
				Name: "validateds.charts.example.com", Version: "v1alpha1", Kind: "Validated",
				DisplayName: "Validated", Description: "An instance of the validated chart.",
				Resources: []v1alpha1.APIResourceReference{{Kind: "ConfigMap", Name: "", Version: "v1"}},
				SpecDescriptors: []v1alpha1.SpecDescriptor{
					{Path: "replicas", DisplayName: "Replicas"}, {Path: "mode", DisplayName: "Mode"}, {Path: "tags", DisplayName: "Tags"},
				},
				StatusDescriptors: []v1alpha1.StatusDescriptor{{Path: "conditions", DisplayName: "Conditions"}},
			}}},
			InstallStrategy: v1alpha1.NamedInstallStrategy{
				StrategyName: v1alpha1.InstallStrategyNameDeployment,
				StrategySpec: v1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{{
						Name: "validated-operator-controller-manager",
						Spec: appsv1.DeploymentSpec{
							Replicas: &replicas,
							Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}},
							Template: corev1.PodTemplateSpec{
								ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"control-plane": "controller-manager"}},
								Spec: corev1.PodSpec{
									ServiceAccountName: operatorSA,
									Containers:         []corev1.Container{{Name: "manager", Image: "example.com/validated-operator:v" + v, Args: []string{"run"}}},
								},
							},
						},
					}},
					ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: operatorSA, Rules: operatorRules()}},
				},
			},
		},
	}
	return &fixture{
		csv: csv,
		crd: crd,
		examples: []map[string]any{{
			"apiVersion": "charts.example.com/v1alpha1", "kind": "Validated",
			"metadata": map[string]any{"name": "validated-sample"},
			"spec":     map[string]any{"replicas": 2, "mode": "fast", "tags": []any{"a", "b"}},
		}},
		annotations: map[string]string{
			registryv1.AnnotationMediaType:      registryv1.MediaTypeRegistryV1,
			registryv1.AnnotationManifests:      "manifests/",
			registryv1.AnnotationMetadata:       "metadata/",
			registryv1.AnnotationPackage:        "validated-operator",
			registryv1.AnnotationChannels:       "alpha",
			registryv1.AnnotationDefaultChannel: "alpha",
		},
	}
}

// write writes the bundle into dir.
func (f *fixture) write(t testing.TB, dir string) string {
	t.Helper()
	examples, err := json.Marshal(f.examples)
	if err != nil {
		t.Fatal(err)
	}
	csv := f.csv.DeepCopy()
	if _, set := csv.Annotations[almExamples]; !set {
		csv.Annotations[almExamples] = string(examples)
	}
	files := map[string]any{
		"manifests/validated-operator.clusterserviceversion.yaml": csv,
		"manifests/charts.example.com_validateds.yaml":            f.crd,
		"metadata/annotations.yaml":                               map[string]any{"annotations": f.annotations},
	}
	for name, obj := range f.objects {
		files["manifests/"+name] = obj
	}
	for name, obj := range files {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), data)
	}
	if f.config != "" {
		writeFile(t, filepath.Join(dir, ConfigFile), []byte(f.config))
	}
	return dir
}

// inProject copies testdata/PROJECT into a temporary directory and writes
// the bundle into its bundle/ directory, as a project keeps it.
func (f *fixture) inProject(t testing.TB, project string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), project)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", project))); err != nil {
		t.Fatal(err)
	}
	for name, obj := range f.projectFiles {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), data)
	}
	return f.write(t, filepath.Join(dir, "bundle"))
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
