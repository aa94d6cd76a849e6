package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/scaffold"
	"github.com/chartpilot/chartpilot/scorecard"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	var env *clustertest.Env
	os.Exit(clustertest.MainWith(m, &env, clustertest.Options{WithoutOLM: true, Setup: func(e *clustertest.Env) (func(), error) {
		cfg = e.Config
		return nil, nil
	}}))
}

// Charts the operators under test are scaffolded from: webapp has `helm
// create`'s autoscaling values and HPA, hello (the example operator's) has
// a Deployment and no autoscaling of its own.
var (
	webapp = filepath.Join("..", "..", "chart", "testdata", "charts", "webapp")
	hello  = filepath.Join("..", "..", "helm-charts", "hello")
)

// project scaffolds the operator of the chart at chartDir (its name is the
// directory's, its kind that name capitalised) with chartpilot init, its
// chart at chartVersion, and writes its bundle of CSV version v into
// bundle/: the CRD and sample as scaffolded, the derived role.yaml as the
// CSV's cluster permissions and permissions.
func project(t *testing.T, chartDir, chartVersion, v string) string {
	t.Helper()
	name := filepath.Base(chartDir)
	dir := filepath.Join(t.TempDir(), name+"-operator")
	if err := scaffold.Init(scaffold.Options{Dir: dir, APIOptions: scaffold.APIOptions{Chart: chartDir}}); err != nil {
		t.Fatal(err)
	}
	chartFile := filepath.Join(dir, "helm-charts", name, "Chart.yaml")
	replace(t, chartFile, "version: 0.1.0", "version: "+chartVersion)

	// role.yaml: the ClusterRole (cluster-scoped rules), then the Role
	// (namespaced ones), the CSV's clusterPermissions and permissions.
	roleDocs := strings.Split(string(readFile(t, filepath.Join(dir, "config", "rbac", "role.yaml"))), "\n---\n")
	if len(roleDocs) != 2 {
		t.Fatalf("role.yaml: %d documents, want a ClusterRole and a Role", len(roleDocs))
	}
	var clusterRole rbacv1.ClusterRole
	var role rbacv1.Role
	if err := yaml.Unmarshal([]byte(roleDocs[0]), &clusterRole); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(roleDocs[1]), &role); err != nil {
		t.Fatal(err)
	}
	var sample map[string]any
	readYAML(t, filepath.Join(dir, "config", "samples", "charts.example.com_v1alpha1_"+name+".yaml"), &sample)
	examples, err := json.Marshal([]any{sample})
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	readYAML(t, filepath.Join(dir, "config", "manifests", "bases", name+"-operator.clusterserviceversion.yaml"), &csv)
	csv.Name = name + "-operator.v" + v
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: semver.MustParse(v)}
	csv.Annotations["alm-examples"] = string(examples)
	sa := name + "-operator-controller-manager"
	labels := map[string]string{"control-plane": "controller-manager"}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{
		StrategyName: v1alpha1.InstallStrategyNameDeployment,
		StrategySpec: v1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{{Name: sa, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					ServiceAccountName: sa, Containers: []corev1.Container{{Name: "manager", Image: "example.com/" + name + "-operator:v" + v}},
				}},
			}}},
			ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: sa, Rules: clusterRole.Rules}},
			Permissions:        []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: sa, Rules: role.Rules}},
		},
	}
	bundle := filepath.Join(dir, "bundle")
	writeYAML(t, filepath.Join(bundle, "manifests", name+"-operator.clusterserviceversion.yaml"), &csv)
	crdFile := "charts.example.com_" + name + "s.yaml"
	crd, err := os.ReadFile(filepath.Join(dir, "config", "crd", "bases", crdFile))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bundle, "manifests", crdFile), crd)
	writeYAML(t, filepath.Join(bundle, "metadata", "annotations.yaml"), map[string]any{"annotations": map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   name + "-operator",
		"operators.operatorframework.io.bundle.channels.v1":  "alpha",
	}})
	return bundle
}

// The chartpilot suite on an operator scaffolded from a chart with a
// Deployment: installed, upgraded, uninstalled with the RBAC chartpilot
// derived, its pods made Ready by kwok.
func TestClusterSuiteOnLocalCluster(t *testing.T) {
	clustertest.SkipIfShort(t)
	from := project(t, webapp, "0.1.0", "0.1.0")
	to := project(t, webapp, "0.2.0", "0.2.0")
	opts := scorecard.Options{BundleDir: to, FromBundleDir: from, Config: cfg, WaitTime: 60 * time.Second}

	// The static suites first: those a scaffolded project passes before
	// bundle generation fills in descriptors and resources.
	began := time.Now()
	static, err := scorecard.Run(context.Background(), scorecard.Options{BundleDir: to, Selector: mustSelector(t, "suite in (basic,olm)")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("static suites: %d tests in %s", len(static.Items), time.Since(began).Round(time.Millisecond))
	for _, item := range static.Items {
		r := item.Status.Results[0]
		switch r.Name {
		case scorecardtests.BasicCheckSpec, scorecardtests.OLMBundleValidation, scorecardtests.OLMCRDsHaveValidation:
			if r.State != v1alpha3.PassState {
				t.Errorf("%s: %s %q", r.Name, r.State, r.Errors)
			}
		}
	}

	began = time.Now()
	opts.Selector = labels.SelectorFromSet(labels.Set{"suite": scorecardtests.SuiteChartpilot})
	list, err := scorecard.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster suite: %d tests in %s", len(list.Items), time.Since(began).Round(time.Millisecond))
	// Every in-cluster test of the suite.
	want := []string{scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotInsights, scorecardtests.ChartpilotAutoscale, scorecardtests.ChartpilotAutorollback, scorecardtests.ChartpilotBackupRestore}
	var ran []string
	for _, item := range list.Items {
		ran = append(ran, item.Status.Results[0].Name)
	}
	slices.Sort(want)
	slices.Sort(ran)
	if !slices.Equal(ran, want) {
		t.Fatalf("ran %v, want the chartpilot suite's %v", ran, want)
	}
	for _, item := range list.Items {
		r := item.Status.Results[0]
		t.Logf("%s: %s\n%s", r.Name, r.State, r.Log)
		// The scaffolded config's cluster stage is parallel and webapp's
		// releases stay in their namespace: the tests run side by side,
		// but those installing the previous bundle, alone after them.
		want := "ran beside the stage's 5 other cluster tests"
		if r.Name == scorecardtests.ChartpilotUpgrade || r.Name == scorecardtests.ChartpilotRBAC {
			want = "ran alone after the stage's other tests"
		}
		if !strings.HasPrefix(r.Log, want) {
			t.Errorf("%s's log does not start with %q", r.Name, want)
		}
		// This cluster's node is kwok's: no image can break the operand and
		// no pod copies a volume, which these tests say rather than pass or
		// fail (the real node proves them: operator/realnode,
		// scorecard/realnode).
		if r.Name == scorecardtests.ChartpilotAutorollback || r.Name == scorecardtests.ChartpilotBackupRestore {
			if r.State != v1alpha3.ErrorState || !strings.Contains(strings.Join(r.Errors, " "), "simulated") {
				t.Errorf("%s on kwok: %s %q, want the error state saying the node is simulated", r.Name, r.State, r.Errors)
			}
			continue
		}
		if r.State != v1alpha3.PassState {
			t.Errorf("%s: %s\n%s\nsuggestions: %q", r.Name, r.State, strings.Join(r.Errors, "\n"), r.Suggestions)
		}
	}
}

// chartpilot-autoscale with the cluster's own HPA controller
// (kube-controller-manager) scaling the workloads: on a chart with its own
// HPA driven by the CR's values (webapp), and on one the operator adds the
// HPA to (hello).
func TestAutoscaleOnLocalCluster(t *testing.T) {
	clustertest.SkipIfShort(t)
	for _, chartDir := range []string{webapp, hello} {
		t.Run(filepath.Base(chartDir), func(t *testing.T) {
			opts := scorecard.Options{BundleDir: project(t, chartDir, "0.1.0", "0.1.0"), Config: cfg, WaitTime: 60 * time.Second,
				Selector: mustSelector(t, "test="+scorecardtests.ChartpilotAutoscale+"-test")}
			list, err := scorecard.Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 {
				t.Fatalf("ran %d tests, want %s alone", len(list.Items), scorecardtests.ChartpilotAutoscale)
			}
			r := list.Items[0].Status.Results[0]
			t.Logf("%s: %s\n%s", r.Name, r.State, r.Log)
			if r.State != v1alpha3.PassState {
				t.Errorf("%s: %s\n%s", r.Name, r.State, strings.Join(r.Errors, "\n"))
			}
		})
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, data)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func replace(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
