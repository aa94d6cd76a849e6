package scorecard

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/logtest"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/scaffold"
)

// withoutConfigMapDelete drops "delete" from the operator's ConfigMap rule:
// it installs, but cannot uninstall what it installed.
func withoutConfigMapDelete(f *fixture) {
	rules := f.csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0].Rules
	rules[0].Verbs = slices.DeleteFunc(slices.Clone(rules[0].Verbs), func(v string) bool { return v == "delete" })
}

// The cluster suite on a real API server (envtest, RBAC enforced): each
// test on a bundle that passes and one that fails it.
func TestClusterTests(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{})
	tests := []struct {
		name string
		test string
		// bundle writes the bundle under test (in its project); from, if
		// set, the bundle upgraded from.
		bundle, from func(t *testing.T) string
		wantState    v1alpha3.State
		wantErrors   []string
		// wantLog are lines the result's log must hold.
		wantLog []string
		// wait is the WaitTime, 20s unless set: the failures that wait
		// for what never happens set less.
		wait time.Duration
	}{
		{
			name: "install", test: scorecardtests.ChartpilotInstall,
			bundle:    func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			wantState: v1alpha3.PassState,
		},
		{
			name: "install rejected sample", test: scorecardtests.ChartpilotInstall,
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.1.0")
				f.examples[0]["spec"].(map[string]any)["mode"] = "slow"
				return f.inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"creating Validated validated-sample", `Unsupported value: "slow"`},
		},
		{
			// Besides the alm-example, project-v1's other sample and its
			// chart's ci/safe-values.yaml.
			name: "upgrade", test: scorecardtests.ChartpilotUpgrade,
			from:      func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle:    func(t *testing.T) string { return newFixture(t, "0.2.0").inProject(t, "project-v2") },
			wantState: v1alpha3.PassState,
			wantLog: []string{
				"charts.example.com_v1alpha1_validated_small.yaml: Validated validated-small",
				"ci/safe-values.yaml: Validated validated-ci-safe",
				"Validated validated-sample kept by the upgrade", "Validated validated-small kept by the upgrade", "Validated validated-ci-safe kept by the upgrade",
				"Validated validated-ci-safe: revision 1 -> ", "Validated validated-small: revision 1 -> ",
			},
		},
		{
			// v1beta1 added as the storage version, the operator watching it:
			// the CRs of v1alpha1 read the same in both.
			name: "upgrade to a new API version", test: scorecardtests.ChartpilotUpgrade,
			from: func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.2.0")
				beta := *f.crd.Spec.Versions[0].DeepCopy()
				beta.Name = "v1beta1"
				f.crd.Spec.Versions[0].Storage = false
				f.crd.Spec.Versions = append(f.crd.Spec.Versions, beta)
				owned := f.csv.Spec.CustomResourceDefinitions.Owned[0]
				owned.Version = "v1beta1"
				f.csv.Spec.CustomResourceDefinitions.Owned = append(f.csv.Spec.CustomResourceDefinitions.Owned, owned)
				f.examples[0]["apiVersion"] = "charts.example.com/v1beta1"
				f.projectFiles = map[string]any{"watches.yaml": []any{map[string]any{
					"group": "charts.example.com", "version": "v1beta1", "kind": "Validated", "chart": "helm-charts/validated"}}}
				return f.inProject(t, "project-v2")
			},
			wantState: v1alpha3.PassState,
			wantLog: []string{
				"Validated validated-ci-safe kept by the upgrade: accepted and its spec unchanged in v1alpha1, v1beta1",
				"Validated validated-sample: revision 1 -> 2, chart validated-0.2.0",
			},
		},
		{
			name: "upgrade narrowing an enum a values set uses", test: scorecardtests.ChartpilotUpgrade,
			from: func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.2.0")
				mode := f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["mode"]
				mode.Enum = mode.Enum[:1] // fast only
				f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["mode"] = mode
				return f.inProject(t, "project-v2")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"Validated validated-ci-safe is not accepted in v1alpha1 by the new CRD", `Unsupported value: "safe"`},
		},
		{
			name: "upgrade pruning a field the samples hold", test: scorecardtests.ChartpilotUpgrade,
			from: func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.2.0")
				spec := f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				spec.XPreserveUnknownFields = nil
				delete(spec.Properties, "tags")
				f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
				return f.inProject(t, "project-v2")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{
				"Validated validated-sample read in v1alpha1 after the upgrade: spec.tags pruned",
				"Validated validated-ci-safe read in v1alpha1 after the upgrade: spec.tags pruned",
			},
		},
		{
			name: "upgrade dropping the stored version", test: scorecardtests.ChartpilotUpgrade,
			from: func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.2.0")
				f.crd.Spec.Versions[0].Name = "v1beta1"
				f.csv.Spec.CustomResourceDefinitions.Owned[0].Version = "v1beta1"
				return f.inProject(t, "project-v2")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"updating CRD validateds.charts.example.com: the new CRD drops version v1alpha1, which custom resources are stored in"},
		},
		{
			name: "upgrade without a previous bundle", test: scorecardtests.ChartpilotUpgrade,
			bundle:    func(t *testing.T) string { return newFixture(t, "0.2.0").inProject(t, "project-v2") },
			wantState: v1alpha3.ErrorState, wantErrors: []string{"no previous bundle to upgrade from: pass --from-bundle DIR"},
		},
		{
			name: "uninstall", test: scorecardtests.ChartpilotUninstall,
			bundle:    func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			wantState: v1alpha3.PassState,
		},
		{
			name: "uninstall leaving a ConfigMap", test: scorecardtests.ChartpilotUninstall,
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.1.0")
				withoutConfigMapDelete(f)
				return f.inProject(t, "project-v1")
			},
			wait:      8 * time.Second,
			wantState: v1alpha3.FailState, wantErrors: []string{"Validated validated-sample still exists 8s after its deletion: finalizers [helm.sdk.operatorframework.io/uninstall-release]", "UninstallError"},
		},
		{
			name: "rbac", test: scorecardtests.ChartpilotRBAC,
			bundle:    func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			wantState: v1alpha3.PassState,
		},
		{
			name: "rbac through an upgrade", test: scorecardtests.ChartpilotRBAC,
			from:      func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			bundle:    func(t *testing.T) string { return newFixture(t, "0.2.0").inProject(t, "project-v2") },
			wantState: v1alpha3.PassState,
		},
		{
			name: "insights", test: scorecardtests.ChartpilotInsights,
			bundle:    func(t *testing.T) string { return withInsights(t, newFixture(t, "0.1.0")).inProject(t, "project-v1") },
			wantState: v1alpha3.PassState,
		},
		{
			name: "insights with the PrometheusRule in the bundle", test: scorecardtests.ChartpilotInsights,
			bundle: func(t *testing.T) string {
				return inBundle(withInsights(t, newFixture(t, "0.1.0"))).inProject(t, "project-v1")
			},
			wantState: v1alpha3.PassState,
		},
		{
			name: "insights without a PrometheusRule", test: scorecardtests.ChartpilotInsights,
			bundle: func(t *testing.T) string {
				f := withInsights(t, newFixture(t, "0.1.0"))
				f.projectFiles = nil
				return f.inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"neither the bundle nor the project", "has a PrometheusRule"},
		},
		{
			name: "insights with an alert Prometheus cannot load", test: scorecardtests.ChartpilotInsights,
			bundle: func(t *testing.T) string {
				return withInsights(t, newFixture(t, "0.1.0"), `sum by (name) (rate(`+releasemetrics.Reconciles+`[5m])`).inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"PrometheusRule validated-operator-alerts", "could not parse expression"},
		},
		{
			name: "insights with an alert on a series the operator does not export", test: scorecardtests.ChartpilotInsights,
			bundle: func(t *testing.T) string {
				return withInsights(t, newFixture(t, "0.1.0"), `chartpilot_release_nonsense == 1`).inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"selects chartpilot_release_nonsense, which the operator does not export"},
		},
		{
			name: "insights with a CRD that prunes the health", test: scorecardtests.ChartpilotInsights,
			bundle: func(t *testing.T) string {
				f := withInsights(t, newFixture(t, "0.1.0"))
				delete(f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties, "health")
				return f.inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"CRD validateds.charts.example.com v1alpha1: status has no health property"},
		},
		{
			name: "autoscale with a CRD that prunes spec.autoscaling", test: scorecardtests.ChartpilotAutoscale,
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.1.0")
				spec := f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				spec.XPreserveUnknownFields = nil
				f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
				return f.inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"the CRD of Validated prunes spec.autoscaling: regenerate it with chartpilot generate"},
		},
		{
			name: "autoscale on a release without a workload", test: scorecardtests.ChartpilotAutoscale,
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.1.0")
				f.crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties[autoscale.Field] = autoscale.Schema()
				return f.inProject(t, "project-v1")
			},
			wantState: v1alpha3.FailState, wantErrors: []string{"Validated validated-sample: its release has no Deployment or StatefulSet to scale"},
		},
		{
			// envtest has no node: nothing can break the operand.
			name: "autorollback without a node that runs containers", test: scorecardtests.ChartpilotAutorollback,
			bundle:    func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			wantState: v1alpha3.ErrorState, wantErrors: []string{"cannot be proven on this cluster: no node runs containers (0 node(s), 0 simulated by kwok)"},
		},
		{
			name: "rbac missing delete", test: scorecardtests.ChartpilotRBAC,
			bundle: func(t *testing.T) string {
				f := newFixture(t, "0.1.0")
				withoutConfigMapDelete(f)
				return f.inProject(t, "project-v1")
			},
			wait:      8 * time.Second,
			wantState: v1alpha3.FailState, wantErrors: []string{
				`the operator was forbidden to delete configmaps validated-sample-validated (API group "") in namespace scorecard-rbac-`,
				`the CSV lacks permissions or clusterPermissions rule {apiGroups: [""], resources: ["configmaps"], verbs: ["delete"]}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logtest.Lines
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the operators' logs:\n%s", logs.String())
				}
			})
			opts := Options{
				BundleDir: tt.bundle(t),
				Selector:  labels.SelectorFromSet(labels.Set{labelTest: tt.test + "-test"}),
				Config:    cfg,
				WaitTime:  cmp.Or(tt.wait, 20*time.Second),
				Log:       logs.Logger(1),
			}
			if tt.from != nil {
				opts.FromBundleDir = tt.from(t)
			}
			began := time.Now()
			list, err := Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 {
				t.Fatalf("want 1 test, got %d", len(list.Items))
			}
			res := list.Items[0].Status.Results[0]
			t.Logf("%s: %s in %s\n%s", res.Name, res.State, time.Since(began).Round(time.Millisecond), res.Log)
			if res.State != tt.wantState {
				t.Errorf("state %s, want %s; errors:\n%s\nsuggestions: %q", res.State, tt.wantState, strings.Join(res.Errors, "\n"), res.Suggestions)
			}
			for _, want := range tt.wantErrors {
				if !strings.Contains(strings.Join(res.Errors, "\n"), want) {
					t.Errorf("errors do not say %q:\n%s", want, strings.Join(res.Errors, "\n"))
				}
			}
			for _, want := range tt.wantLog {
				if !strings.Contains(res.Log, want) {
					t.Errorf("the log does not say %q", want)
				}
			}
			assertCleanedUp(t, cfg)
		})
	}
}

// assertCleanedUp checks that a test left no CRD and no cluster-wide RBAC.
func assertCleanedUp(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	crds, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		t.Errorf("CRD %s left behind", crd.Name)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	roles, err := kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if strings.HasPrefix(r.Name, "scorecard-") {
			t.Errorf("ClusterRole %s left behind", r.Name)
		}
	}
	bindings, err := kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		if slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return strings.HasPrefix(s.Namespace, "scorecard-") }) {
			t.Errorf("ClusterRoleBinding %s left behind", b.Name)
		}
	}
}

func TestClusterTestsWithoutACluster(t *testing.T) {
	dir := newFixture(t, "0.1.0").inProject(t, "project-v1")
	list, err := Run(context.Background(), Options{BundleDir: dir, Selector: labels.SelectorFromSet(labels.Set{labelSuite: scorecardtests.SuiteChartpilot})})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 8 {
		t.Fatalf("want the 8 chartpilot tests, got %d", len(list.Items))
	}
	for _, item := range list.Items {
		res := item.Status.Results[0]
		if res.State != v1alpha3.ErrorState || !slices.Contains(res.Errors, errNoCluster.Error()) {
			t.Errorf("%s: %s %q, want error %q", res.Name, res.State, res.Errors, errNoCluster)
		}
	}
	if got := ExitCode(list); got != 2 {
		t.Errorf("exit code %d, want 2", got)
	}
}

// withInsights gives the fixture what chartpilot-insights checks: the
// runtime's status schema in its CRD and, in the project's alerts file, a
// PrometheusRule with alerts on the runtime's series (or on exprs, when
// given).
func withInsights(t *testing.T, f *fixture, exprs ...string) *fixture {
	t.Helper()
	v := &f.crd.Spec.Versions[0]
	v.Schema.OpenAPIV3Schema.Properties["status"] = reconciler.StatusSchema()
	if len(exprs) == 0 {
		exprs = []string{
			releasemetrics.Failed + ` == 1`,
			releasemetrics.Ready + ` == 0 and on (kind, namespace, name) ` + releasemetrics.Failed + ` == 0`,
			`increase(` + releasemetrics.DriftRepairs + `[1h]) > 3`,
			`rate(` + releasemetrics.Reconciles + `{result="error"}[5m]) > 0`,
			`absent(up{job="validated-operator-controller-manager-metrics-service"} == 1)`,
		}
	}
	var rules []any
	for i, e := range exprs {
		rules = append(rules, map[string]any{"alert": fmt.Sprintf("Alert%d", i), "expr": e, "for": "5m"})
	}
	f.projectFiles = map[string]any{scaffold.AlertsFile: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
		"metadata": map[string]any{"name": "validated-operator-alerts"},
		"spec":     map[string]any{"groups": []any{map[string]any{"name": "validated", "rules": rules}}},
	}}
	return f
}

// inBundle moves the fixture's alerts from the project into the bundle, as
// a project that enabled ../prometheus in config/default ships them.
func inBundle(f *fixture) *fixture {
	f.objects = map[string]any{"validated-operator-alerts.yaml": f.projectFiles[scaffold.AlertsFile]}
	f.projectFiles = nil
	return f
}

// The chartpilot suite's stage on a real API server: the tests run side by
// side sharing the bundle's CRDs (created once, deleted after the last, a
// CRD that was there before kept), those installing the previous bundle
// alone after them, and all of them one at a time when a release renders a
// cluster-scoped object.
func TestClusterTestsSideBySide(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{})
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	const crdName = "validateds.charts.example.com"
	selector := func(tests ...string) labels.Selector {
		var names []string
		for _, n := range tests {
			names = append(names, n+"-test")
		}
		sel, err := labels.Parse(labelTest + " in (" + strings.Join(names, ",") + ")")
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	withClusterRole := func(f *fixture) *fixture {
		rules := &f.csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions[0].Rules
		*rules = append(*rules, rbacv1.PolicyRule{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}})
		f.projectFiles = map[string]any{"helm-charts/validated/templates/clusterrole.yaml": map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "validated-reader"},
		}}
		return f
	}
	beside := "ran beside the stage's 2 other cluster tests"
	tests := []struct {
		name       string
		bundle     func(t *testing.T) string
		from       bool
		tests      []string
		crdBefore  bool
		wantLog    map[string][]string
		wantCRDLog map[string]int // log line -> how many of the tests' logs hold it
	}{
		{
			name:   "side by side",
			bundle: func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			tests:  []string{scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotRBAC},
			wantLog: map[string][]string{
				scorecardtests.ChartpilotInstall: {beside}, scorecardtests.ChartpilotUninstall: {beside}, scorecardtests.ChartpilotRBAC: {beside},
			},
			wantCRDLog: map[string]int{"installed CRD " + crdName: 1, "CRD " + crdName + " already served as this bundle has it": 2},
		},
		{
			name:       "side by side, the CRD there before",
			bundle:     func(t *testing.T) string { return newFixture(t, "0.1.0").inProject(t, "project-v1") },
			tests:      []string{scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotRBAC},
			crdBefore:  true,
			wantCRDLog: map[string]int{"updated CRD " + crdName: 1, "CRD " + crdName + " already served as this bundle has it": 2},
		},
		{
			name:   "from a previous bundle",
			bundle: func(t *testing.T) string { return newFixture(t, "0.2.0").inProject(t, "project-v2") },
			from:   true,
			tests:  []string{scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotRBAC},
			wantLog: map[string][]string{
				scorecardtests.ChartpilotInstall: {"ran beside the stage's 1 other cluster tests"},
				scorecardtests.ChartpilotUpgrade: {"ran alone after the stage's other tests"},
				scorecardtests.ChartpilotRBAC:    {"ran alone after the stage's other tests"},
			},
			// install and uninstall share one; upgrade and rbac each make
			// their own, of the previous bundle, whose CRD this one's equals.
			wantCRDLog: map[string]int{"installed CRD " + crdName: 3, "CRD " + crdName + " already served as this bundle has it": 3},
		},
		{
			name:   "a release with a cluster-scoped object",
			bundle: func(t *testing.T) string { return withClusterRole(newFixture(t, "0.1.0")).inProject(t, "project-v1") },
			tests:  []string{scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotUninstall},
			wantLog: map[string][]string{
				scorecardtests.ChartpilotInstall:   {"ran one at a time: the release of Validated validated-sample renders ClusterRole validated-reader, which is cluster-scoped"},
				scorecardtests.ChartpilotUninstall: {"ran one at a time: the release of Validated validated-sample renders ClusterRole validated-reader, which is cluster-scoped"},
			},
			wantCRDLog: map[string]int{"installed CRD " + crdName: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var logs logtest.Lines
			opts := Options{BundleDir: tt.bundle(t), Selector: selector(tt.tests...), Config: cfg, WaitTime: 20 * time.Second, Log: logs.Logger(1)}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the operators' logs:\n%s", logs.String())
				}
			})
			if tt.from {
				opts.FromBundleDir = newFixture(t, "0.1.0").inProject(t, "project-v1")
			}
			if tt.crdBefore {
				crd := newFixture(t, "0.1.0").crd
				if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			list, err := Run(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != len(tt.tests) {
				t.Fatalf("ran %d tests, want %d", len(list.Items), len(tt.tests))
			}
			crdLog := map[string]int{}
			for _, item := range list.Items {
				res := item.Status.Results[0]
				t.Logf("%s: %s\n%s", res.Name, res.State, res.Log)
				if res.State != v1alpha3.PassState {
					t.Errorf("%s: %s %q", res.Name, res.State, res.Errors)
				}
				for _, want := range tt.wantLog[res.Name] {
					if !strings.Contains(res.Log, want) {
						t.Errorf("%s's log does not say %q", res.Name, want)
					}
				}
				for line := range tt.wantCRDLog {
					if strings.Contains(res.Log, line) {
						crdLog[line]++
					}
				}
			}
			for line, n := range tt.wantCRDLog {
				if crdLog[line] != n {
					t.Errorf("%d of the tests' logs say %q, want %d", crdLog[line], line, n)
				}
			}
			if tt.crdBefore {
				// Kept: the scorecard did not create it.
				if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{}); err != nil {
					t.Fatalf("the CRD there before the run: %v", err)
				}
				if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crdName, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				waitCRDGone(t, ext, crdName)
			}
			assertCleanedUp(t, cfg)
		})
	}
}

func waitCRDGone(t *testing.T, ext apiextensionsclient.Interface, name string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
	}
	t.Fatalf("CRD %s not gone after 20s", name)
}
