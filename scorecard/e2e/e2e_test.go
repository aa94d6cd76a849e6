// Package e2e runs the scorecard on the local cluster (kube-apiserver,
// controllers, scheduler and kwok, without OLM) against an operator
// scaffolded from a chart whose Deployment must become Ready: what envtest
// alone cannot show.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/scaffold"
	"github.com/chartpilot/chartpilot/scorecard"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	flag.Parse() // for testing.Short
	if testing.Short() {
		// The fast tier starts no cluster (SkipIfShort).
		os.Exit(m.Run())
	}
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "chartpilot-scorecard-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		local, err := cluster.New(cluster.Options{StateDir: dir, WithoutOLM: true, Out: os.Stderr})
		if err == nil {
			err = local.Up(context.Background())
			defer func() { _ = local.Down(context.Background(), cluster.DownOptions{Wipe: true}) }()
		}
		if err == nil {
			cfg, err = local.RESTConfig()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
			return 1
		}
		return m.Run()
	}())
}

// project scaffolds the webapp chart's operator with chartpilot init, its
// chart at chartVersion, and writes its bundle of CSV version v into
// bundle/: the CRD and sample as scaffolded, the derived role.yaml as the
// CSV's cluster permissions.
func project(t *testing.T, chartVersion, v string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	if err := scaffold.Init(scaffold.Options{Dir: dir, APIOptions: scaffold.APIOptions{Chart: filepath.Join("..", "..", "chart", "testdata", "charts", "webapp")}}); err != nil {
		t.Fatal(err)
	}
	chartFile := filepath.Join(dir, "helm-charts", "webapp", "Chart.yaml")
	replace(t, chartFile, "version: 0.1.0", "version: "+chartVersion)

	var role rbacv1.ClusterRole
	readYAML(t, filepath.Join(dir, "config", "rbac", "role.yaml"), &role)
	var sample map[string]any
	readYAML(t, filepath.Join(dir, "config", "samples", "charts.example.com_v1alpha1_webapp.yaml"), &sample)
	examples, err := json.Marshal([]any{sample})
	if err != nil {
		t.Fatal(err)
	}
	var csv v1alpha1.ClusterServiceVersion
	readYAML(t, filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml"), &csv)
	csv.Name = "webapp-operator.v" + v
	csv.Namespace = ""
	csv.Spec.Version = version.OperatorVersion{Version: semver.MustParse(v)}
	csv.Annotations["alm-examples"] = string(examples)
	sa := "webapp-operator-controller-manager"
	labels := map[string]string{"control-plane": "controller-manager"}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{
		StrategyName: v1alpha1.InstallStrategyNameDeployment,
		StrategySpec: v1alpha1.StrategyDetailsDeployment{
			DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{{Name: sa, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					ServiceAccountName: sa, Containers: []corev1.Container{{Name: "manager", Image: "example.com/webapp-operator:v" + v}},
				}},
			}}},
			ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: sa, Rules: role.Rules}},
		},
	}
	bundle := filepath.Join(dir, "bundle")
	writeYAML(t, filepath.Join(bundle, "manifests", "webapp-operator.clusterserviceversion.yaml"), &csv)
	crd, err := os.ReadFile(filepath.Join(dir, "config", "crd", "bases", "charts.example.com_webapps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bundle, "manifests", "charts.example.com_webapps.yaml"), crd)
	writeYAML(t, filepath.Join(bundle, "metadata", "annotations.yaml"), map[string]any{"annotations": map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
		"operators.operatorframework.io.bundle.package.v1":   "webapp-operator",
		"operators.operatorframework.io.bundle.channels.v1":  "alpha",
	}})
	return bundle
}

// The chartpilot suite on an operator scaffolded from a chart with a
// Deployment: installed, upgraded, uninstalled with the RBAC chartpilot
// derived, its pods made Ready by kwok.
func TestClusterSuiteOnLocalCluster(t *testing.T) {
	clustertest.SkipIfShort(t)
	from := project(t, "0.1.0", "0.1.0")
	to := project(t, "0.2.0", "0.2.0")
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
		case scorecard.BasicCheckSpec, scorecard.OLMBundleValidation, scorecard.OLMCRDsHaveValidation:
			if r.State != v1alpha3.PassState {
				t.Errorf("%s: %s %q", r.Name, r.State, r.Errors)
			}
		}
	}

	began = time.Now()
	opts.Selector = labels.SelectorFromSet(labels.Set{"suite": scorecard.SuiteChartpilot})
	list, err := scorecard.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster suite: %d tests in %s", len(list.Items), time.Since(began).Round(time.Millisecond))
	// Every in-cluster test of the suite.
	want := []string{scorecard.ChartpilotInstall, scorecard.ChartpilotUpgrade, scorecard.ChartpilotUninstall, scorecard.ChartpilotRBAC, scorecard.ChartpilotInsights, scorecard.ChartpilotBackupRestore}
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
		if r.Name == scorecard.ChartpilotBackupRestore {
			// kwok runs no pod: no volume can be copied, which the test
			// says rather than fail (the real node proves it: see
			// scorecard/realnode).
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

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
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
