package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/rbac/rbactest"
)

// serviceMonitorCRD is a stand-in for the Prometheus Operator's CRD, so
// discovery knows the kind the umbrella chart creates when asked to.
const serviceMonitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestGeneratedRBACOnAPIServer proves on a real API server that the derived
// RBAC is enough for Helm to install, upgrade (value gates on), repair drift
// and uninstall each test chart as the operator's ServiceAccount, and that the
// API server grants that ServiceAccount exactly the derived rules.
func TestGeneratedRBACOnAPIServer(t *testing.T) {
	s := rbactest.Start(t)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(serviceMonitorCRD), &crd); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(s.Admin, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}}); err != nil {
		t.Fatal(err)
	}
	deploy := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	statefulSets := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	clusterRoles := schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles"}
	tests := []struct {
		name, chart string
		// watchNamespace splits the rules into a Role and a ClusterRole.
		watchNamespace bool
		// upgrade are the values of the upgrade: value gates turned on.
		upgrade map[string]any
		// drift is deleted behind Helm's back before an upgrade repairs it.
		drift *rbactest.Drift
	}{
		{name: "webapp", chart: "webapp", watchNamespace: true,
			upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}}, drift: &rbactest.Drift{Resource: deploy, Name: "rel-webapp"}},
		{name: "webapp-all-namespaces", chart: "webapp",
			upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}}, drift: &rbactest.Drift{Resource: configMaps, Name: "rel-webapp"}},
		{name: "umbrella", chart: "umbrella", watchNamespace: true,
			upgrade: map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, "cache": map[string]any{"pdb": map[string]any{"enabled": true}}},
			drift:   &rbactest.Drift{Resource: statefulSets, Name: "rel-cache"}},
		{name: "widgets", chart: "widgets", watchNamespace: true, upgrade: map[string]any{"size": 5}, drift: &rbactest.Drift{Resource: widgets, Name: "rel-default"}},
		{name: "clusterwide", chart: "clusterwide", watchNamespace: true, upgrade: map[string]any{"description": "changed"},
			drift: &rbactest.Drift{Resource: clusterRoles, Name: "rel-node-reader", ClusterScoped: true}},
		{name: "validated", chart: "validated", upgrade: map[string]any{"replicas": 3, "mode": "safe"}, drift: &rbactest.Drift{Resource: configMaps, Name: "rel-validated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			ns := "op-" + tt.name
			opts := Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, Config: s.Admin}
			if tt.watchNamespace {
				opts.WatchNamespace = ns
			}
			res, err := Derive(opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range res.Warnings {
				t.Errorf("warning with discovery: %s", w)
			}
			op := s.Bind(t, ns, res.ClusterRole, res.Role, nil)
			if err := s.HelmCycle(op, chartDir(tt.chart), tt.upgrade, tt.drift); err != nil {
				t.Fatalf("as %s: %v", op.User, err)
			}

			// Nothing wider: what the API server grants beyond what an
			// unbound ServiceAccount has is exactly the derived rules.
			baseline := s.Bind(t, ns+"-unbound", &rbacv1.ClusterRole{}, nil, nil)
			base := rbactest.Granted(t, baseline.Config, ns)
			got := rbactest.Granted(t, op.Config, ns)
			want := rbactest.Expected(append(append([]rbacv1.PolicyRule(nil), res.ClusterRole.Rules...), roleRules(res)...))
			for k := range base {
				want[k] = true
			}
			if extra, missing := rbactest.Minus(got, want), rbactest.Minus(want, got); len(extra) > 0 || len(missing) > 0 {
				t.Errorf("granted in %s beyond the derived rules: %q\nderived but not granted: %q", ns, extra, missing)
			}
			// Outside the watched namespace only the ClusterRole applies.
			if tt.watchNamespace {
				other := rbactest.Granted(t, op.Config, "default")
				want := rbactest.Expected(res.ClusterRole.Rules)
				for k := range rbactest.Granted(t, baseline.Config, "default") {
					want[k] = true
				}
				if extra := rbactest.Minus(other, want); len(extra) > 0 {
					t.Errorf("granted outside %s: %q", ns, extra)
				}
			}
		})
	}
}

func roleRules(res *Result) []rbacv1.PolicyRule {
	if res.Role == nil {
		return nil
	}
	return res.Role.Rules
}

// TestEachRuleIsNeeded removes, one at a time, each rule the webapp chart's
// kinds and Helm's storage get, and checks that the Helm cycle then fails
// with a Forbidden error: none of those rules is more than Helm needs.
func TestEachRuleIsNeeded(t *testing.T) {
	s := rbactest.Start(t)
	c, err := chart.Load(chartDir("webapp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, resource := range []string{"configmaps", "services", "deployments", "horizontalpodautoscalers", "secrets"} {
		t.Run("without "+resource, func(t *testing.T) {
			ns := "minus-" + resource
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, WatchNamespace: ns})
			if err != nil {
				t.Fatal(err)
			}
			op := s.Bind(t, ns, res.ClusterRole, res.Role, func(r rbacv1.PolicyRule) bool { return r.Resources[0] != resource })
			err = s.HelmCycle(op, chartDir("webapp"), map[string]any{"autoscaling": map[string]any{"enabled": true}}, nil)
			if err == nil {
				t.Fatalf("the Helm cycle succeeded without the rule on %s", resource)
			}
			if !apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "forbidden") {
				t.Fatalf("error = %v, want Forbidden", err)
			}
			if !strings.Contains(err.Error(), resource) {
				t.Errorf("error = %v, want it about %s", err, resource)
			}
		})
	}
}
