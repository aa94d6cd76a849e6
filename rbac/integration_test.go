package rbac

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// apiServer is a real kube-apiserver (RBAC enforced) shared by the
// integration tests of this file.
type apiServer struct {
	admin      *rest.Config
	kubeconfig string
	cs         kubernetes.Interface
	dyn        dynamic.Interface
}

func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an API server")
	}
	logf.SetLogger(logr.Discard())
	env := &envtest.Environment{}
	admin := clustertest.StartAPIServer(t, env)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return &apiServer{admin: admin, kubeconfig: kubeconfig, cs: kubernetes.NewForConfigOrDie(admin), dyn: dynamic.NewForConfigOrDie(admin)}
}

// operator is a ServiceAccount bound to derived RBAC, and Helm as it.
type operator struct {
	namespace, user string
	getter          genericclioptions.RESTClientGetter
	config          *rest.Config
}

// bind creates namespace ns with ServiceAccount "operator" bound to the
// derived Role and ClusterRole (the rules filtered by keep, when given).
func (s *apiServer) bind(t *testing.T, ns string, res *Result, keep func(rbacv1.PolicyRule) bool) *operator {
	t.Helper()
	ctx := context.Background()
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	filter := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		out := []rbacv1.PolicyRule{}
		for _, r := range rules {
			if keep == nil || keep(r) {
				out = append(out, r)
			}
		}
		return out
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "operator", Namespace: ns}}
	name := ns + "-manager"
	cr := res.ClusterRole.DeepCopy()
	cr.Name, cr.Rules = name, filter(cr.Rules)
	if _, err := s.cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	if _, err := s.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res.Role != nil {
		role := res.Role.DeepCopy()
		role.Name, role.Namespace, role.Rules = name, ns, filter(role.Rules)
		if _, err := s.cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
		if _, err := s.cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	user := "system:serviceaccount:" + ns + ":operator"
	kubeconfig, namespace, as := s.kubeconfig, ns, user
	cfg := rest.CopyConfig(s.admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return &operator{namespace: ns, user: user, config: cfg,
		getter: &genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Namespace: &namespace, Impersonate: &as}}
}

// helmCycle does, as the operator, what the runtime does with a release:
// install with the default values, upgrade with more values, repair drift
// (an object deleted behind Helm's back is recreated by an upgrade), and
// uninstall.
func (s *apiServer) helmCycle(op *operator, path string, upgrade map[string]any, drift *schema.GroupVersionResource, driftName string, driftClusterScoped bool) error {
	cfg := new(action.Configuration)
	if err := cfg.Init(op.getter, op.namespace, "secret", func(string, ...any) {}); err != nil {
		return err
	}
	load := func() (*chart.Chart, error) { return chart.Load(path) }
	c, err := load()
	if err != nil {
		return err
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Timeout = "rel", op.namespace, time.Minute
	if _, err := install.Run(c.Helm, map[string]any{}); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	upgradeTo := func(what string, vals map[string]any) error {
		c, err := load()
		if err != nil {
			return err
		}
		u := action.NewUpgrade(cfg)
		u.Namespace, u.Timeout = op.namespace, time.Minute
		if _, err := u.Run("rel", c.Helm, vals); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if err := upgradeTo("upgrade", upgrade); err != nil {
		return err
	}
	if drift != nil {
		ctx := context.Background()
		driftNS := op.namespace
		if driftClusterScoped {
			driftNS = ""
		}
		if err := s.dyn.Resource(*drift).Namespace(driftNS).Delete(ctx, driftName, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s %s as admin: %w", drift.Resource, driftName, err)
		}
		if err := upgradeTo("drift repair", upgrade); err != nil {
			return err
		}
		if _, err := s.dyn.Resource(*drift).Namespace(driftNS).Get(ctx, driftName, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("drift repair did not recreate %s %s: %w", drift.Resource, driftName, err)
		}
	}
	if _, err := action.NewUninstall(cfg).Run("rel"); err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	return nil
}

// granted is what a subject may do in a namespace, as the API server's
// SelfSubjectRulesReview reports it, as "group/resource[names] verb" lines.
func granted(t *testing.T, cfg *rest.Config, ns string) map[string]bool {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	review, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range review.Status.ResourceRules {
		out = addTriples(out, r.APIGroups, r.Resources, r.ResourceNames, r.Verbs)
	}
	for _, r := range review.Status.NonResourceRules {
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out[u+" "+v] = true
			}
		}
	}
	return out
}

func addTriples(out map[string]bool, groups, resources, names, verbs []string) map[string]bool {
	for _, g := range groups {
		for _, res := range resources {
			for _, v := range verbs {
				out[fmt.Sprintf("%s/%s%v %s", g, res, names, v)] = true
			}
		}
	}
	return out
}

func expectedTriples(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			for _, u := range r.NonResourceURLs {
				for _, v := range r.Verbs {
					out[u+" "+v] = true
				}
			}
			continue
		}
		if r.ResourceNames == nil {
			r.ResourceNames = []string{}
		}
		addTriples(out, r.APIGroups, r.Resources, r.ResourceNames, r.Verbs)
	}
	return out
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

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
	s := startAPIServer(t)
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(serviceMonitorCRD), &crd); err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(s.admin, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{&crd}}); err != nil {
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
		drift     *schema.GroupVersionResource
		driftName string
		// driftClusterScoped says the drifted object has no namespace.
		driftClusterScoped bool
	}{
		{name: "webapp", chart: "webapp", watchNamespace: true,
			upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}}, drift: &deploy, driftName: "rel-webapp"},
		{name: "webapp-all-namespaces", chart: "webapp",
			upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}}, drift: &configMaps, driftName: "rel-webapp"},
		{name: "umbrella", chart: "umbrella", watchNamespace: true,
			upgrade: map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, "cache": map[string]any{"pdb": map[string]any{"enabled": true}}},
			drift:   &statefulSets, driftName: "rel-cache"},
		{name: "widgets", chart: "widgets", watchNamespace: true, upgrade: map[string]any{"size": 5}, drift: &widgets, driftName: "rel-default"},
		{name: "clusterwide", chart: "clusterwide", watchNamespace: true, upgrade: map[string]any{"description": "changed"},
			drift: &clusterRoles, driftName: "rel-node-reader", driftClusterScoped: true},
		{name: "validated", chart: "validated", upgrade: map[string]any{"replicas": 3, "mode": "safe"}, drift: &configMaps, driftName: "rel-validated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			ns := "op-" + tt.name
			opts := Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, Config: s.admin}
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
			op := s.bind(t, ns, res, nil)
			if err := s.helmCycle(op, chartDir(tt.chart), tt.upgrade, tt.drift, tt.driftName, tt.driftClusterScoped); err != nil {
				t.Fatalf("as %s: %v", op.user, err)
			}

			// Nothing wider: what the API server grants beyond what an
			// unbound ServiceAccount has is exactly the derived rules.
			baseline := s.bind(t, ns+"-unbound", &Result{ClusterRole: &rbacv1.ClusterRole{}}, nil)
			base := granted(t, baseline.config, ns)
			got := granted(t, op.config, ns)
			want := expectedTriples(append(append([]rbacv1.PolicyRule(nil), res.ClusterRole.Rules...), roleRules(res)...))
			for k := range base {
				want[k] = true
			}
			if extra, missing := minus(got, want), minus(want, got); len(extra) > 0 || len(missing) > 0 {
				t.Errorf("granted in %s beyond the derived rules: %q\nderived but not granted: %q", ns, extra, missing)
			}
			// Outside the watched namespace only the ClusterRole applies.
			if tt.watchNamespace {
				other := granted(t, op.config, "default")
				want := expectedTriples(res.ClusterRole.Rules)
				for k := range granted(t, baseline.config, "default") {
					want[k] = true
				}
				if extra := minus(other, want); len(extra) > 0 {
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
	s := startAPIServer(t)
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
			op := s.bind(t, ns, res, func(r rbacv1.PolicyRule) bool { return r.Resources[0] != resource })
			err = s.helmCycle(op, chartDir("webapp"), map[string]any{"autoscaling": map[string]any{"enabled": true}}, nil, "", false)
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
