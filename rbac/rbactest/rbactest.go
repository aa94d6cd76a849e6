package rbactest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/operator/release"
)

// APIServer is a real kube-apiserver (RBAC enforced), started by Start.
type APIServer struct {
	// Admin is the cluster admin's configuration.
	Admin      *rest.Config
	kubeconfig string
	cs         kubernetes.Interface
	dyn        dynamic.Interface
}

// Start starts envtest's API server for the test (skipped with -short).
func Start(t *testing.T) *APIServer {
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
	return &APIServer{Admin: admin, kubeconfig: kubeconfig, cs: kubernetes.NewForConfigOrDie(admin), dyn: dynamic.NewForConfigOrDie(admin)}
}

// Operator is a ServiceAccount bound to roles, and how to act as it.
type Operator struct {
	// Namespace holds the ServiceAccount "operator"; User is its user name.
	Namespace, User string
	// Config acts as the ServiceAccount.
	Config *rest.Config
}

// Bind creates namespace ns with ServiceAccount "operator" bound to copies
// of clusterRole and role (nil: none), renamed after ns, with only the rules
// keep accepts (nil: all).
func (s *APIServer) Bind(t *testing.T, ns string, clusterRole *rbacv1.ClusterRole, role *rbacv1.Role, keep func(rbacv1.PolicyRule) bool) *Operator {
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
	cr := clusterRole.DeepCopy()
	cr.Name, cr.Rules = name, filter(cr.Rules)
	if _, err := s.cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	if _, err := s.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if role != nil {
		role := role.DeepCopy()
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
	cfg := rest.CopyConfig(s.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	// The authorizer learns of new bindings from its informers, moments
	// after they are created: a check made at once may be refused.
	waitAuthorized(t, cfg, "", cr.Rules)
	if role != nil {
		waitAuthorized(t, cfg, ns, filter(role.Rules))
	}
	return &Operator{Namespace: ns, User: user, Config: cfg}
}

// waitAuthorized waits until the first resource rule of rules is allowed
// to cfg's user in ns ("" for the cluster), as a SelfSubjectAccessReview.
func waitAuthorized(t *testing.T, cfg *rest.Config, ns string, rules []rbacv1.PolicyRule) {
	t.Helper()
	i := slices.IndexFunc(rules, func(r rbacv1.PolicyRule) bool {
		return len(r.APIGroups) > 0 && len(r.Resources) > 0 && len(r.Verbs) > 0
	})
	if i < 0 {
		return
	}
	r := rules[i]
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Group: r.APIGroups[0], Resource: r.Resources[0], Verb: r.Verbs[0]}
	if len(r.ResourceNames) > 0 {
		attrs.Name = r.ResourceNames[0]
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("the operator's binding was not in force within 30s (%+v): %v", *attrs, err)
	}
}

// Drift is an object deleted behind Helm's back, which the runtime must recreate.
type Drift struct {
	Resource schema.GroupVersionResource
	Name     string
	// ClusterScoped objects have no namespace.
	ClusterScoped bool
}

// HelmCycle does, as the operator, what the runtime does with a release of
// the chart at path, through the runtime's own release client: install with
// the default values, upgrade with the given values, repair drift (when
// given), uninstall.
func (s *APIServer) HelmCycle(op *Operator, path string, upgrade map[string]any, drift *Drift) error {
	ctx := context.Background()
	helm, err := release.NewClient(op.Config)
	if err != nil {
		return err
	}
	c, err := chart.Load(path)
	if err != nil {
		return err
	}
	req := func(vals map[string]any) *release.Request {
		return &release.Request{Name: "rel", Namespace: op.Namespace, Chart: c.Helm, Values: vals, Timeout: time.Minute}
	}
	if _, err := helm.Reconcile(ctx, req(map[string]any{})); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if _, err := helm.Reconcile(ctx, req(upgrade)); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	if drift != nil {
		driftNS := op.Namespace
		if drift.ClusterScoped {
			driftNS = ""
		}
		if err := s.dyn.Resource(drift.Resource).Namespace(driftNS).Delete(ctx, drift.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s %s as admin: %w", drift.Resource.Resource, drift.Name, err)
		}
		if _, err := helm.Reconcile(ctx, req(upgrade)); err != nil {
			return fmt.Errorf("drift repair: %w", err)
		}
		if _, err := s.dyn.Resource(drift.Resource).Namespace(driftNS).Get(ctx, drift.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("drift repair did not recreate %s %s: %w", drift.Resource.Resource, drift.Name, err)
		}
	}
	if err := helm.Uninstall(ctx, req(upgrade)); err != nil {
		return fmt.Errorf("uninstall: %w", err)
	}
	return nil
}

// Granted is what a subject may do in a namespace, as the API server's
// SelfSubjectRulesReview reports it, as "group/resource[names] verb" lines.
func Granted(t *testing.T, cfg *rest.Config, ns string) map[string]bool {
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

// Expected is what rules grant, in Granted's form.
func Expected(rules []rbacv1.PolicyRule) map[string]bool {
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

// Minus lists the keys of a that b lacks, sorted.
func Minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
