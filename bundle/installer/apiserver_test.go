package installer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// apiServer is a kube-apiserver with RBAC and the admission plugin that
// makes blockOwnerDeletion need update on the owner's finalizers, with the
// ClusterExtension API served and one ClusterExtension.
type apiServer struct {
	admin *rest.Config
	cs    kubernetes.Interface
	dyn   dynamic.Interface
	ext   *unstructured.Unstructured
}

func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	env := &envtest.Environment{CRDDirectoryPaths: []string{"testdata/clusterextension-crd.yaml"}}
	env.ControlPlane.GetAPIServer().Configure().Set("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	admin := clustertest.StartAPIServer(t, env)
	s := &apiServer{admin: admin, cs: kubernetes.NewForConfigOrDie(admin), dyn: dynamic.NewForConfigOrDie(admin)}
	ext := &unstructured.Unstructured{Object: map[string]any{"apiVersion": ExtensionGroup + "/v1", "kind": "ClusterExtension",
		"metadata": map[string]any{"name": extension}, "spec": map[string]any{"namespace": "widget-system"}}}
	var err error
	if s.ext, err = s.dyn.Resource(extensionsResource).Create(context.Background(), ext, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// view aggregates other roles' rules, which kube-controller-manager
	// does and envtest does not: give it some, or binding it needs nothing.
	view, err := s.cs.RbacV1().ClusterRoles().Get(context.Background(), "view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	view.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps"}, Verbs: []string{"get", "list", "watch"}}}
	if _, err := s.cs.RbacV1().ClusterRoles().Update(context.Background(), view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

const extension = "widget-operator"

var extensionsResource = schema.GroupVersionResource{Group: ExtensionGroup, Version: "v1", Resource: "clusterextensions"}

// bind creates namespace ns, the installer ServiceAccount in it and rbac's
// roles and bindings (rules for which drop says true left out), and returns
// the configuration that acts as the installer.
func (s *apiServer) bind(t *testing.T, ns string, r *RBAC, drop func(rbacv1.PolicyRule) bool) *rest.Config {
	t.Helper()
	ctx := context.Background()
	if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keep := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		return slices.DeleteFunc(slices.Clone(rules), func(r rbacv1.PolicyRule) bool { return drop != nil && drop(r) })
	}
	// Names per namespace, so that runs do not share roles.
	name := r.ClusterRole.Name + "-" + ns
	if _, err := s.cs.CoreV1().ServiceAccounts(ns).Create(ctx, r.ServiceAccount, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cr := r.ClusterRole.DeepCopy()
	cr.Name, cr.Rules = name, keep(cr.Rules)
	crb := r.ClusterRoleBinding.DeepCopy()
	crb.Name, crb.RoleRef.Name = name, name
	if _, err := s.cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, role := range r.Roles {
		role := role.DeepCopy()
		role.Rules = keep(role.Rules)
		if _, err := s.cs.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.cs.RbacV1().RoleBindings(role.Namespace).Create(ctx, r.RoleBindings[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(s.admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + r.ServiceAccount.Name}
	// The authorizer reads roles and bindings from a cache: wait until it
	// has these, or the first request may be refused.
	waitForRules(t, cfg, "", keep(r.ClusterRole.Rules))
	for _, role := range r.Roles {
		waitForRules(t, cfg, role.Namespace, keep(role.Rules))
	}
	return cfg
}

// waitForRules waits until the API server allows cfg's user the first
// permission of the first resource rule.
func waitForRules(t *testing.T, cfg *rest.Config, ns string, rules []rbacv1.PolicyRule) {
	t.Helper()
	i := slices.IndexFunc(rules, func(r rbacv1.PolicyRule) bool { return len(r.Resources) > 0 })
	if i < 0 {
		return
	}
	r := rules[i]
	attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
	if len(r.ResourceNames) > 0 {
		attrs.Name = r.ResourceNames[0]
	}
	if base, sub, ok := strings.Cut(attrs.Resource, "/"); ok {
		attrs.Resource, attrs.Subresource = base, sub
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	})
	if err != nil {
		t.Fatalf("waiting for the installer's rules to be in force (%+v): %v", attrs, err)
	}
}

// operatorController makes, with client-go, the requests operator-controller
// v1.2.0 makes with the installer's identity (read in its source and in
// Helm v3.17.1's and helm-operator-plugins v0.8.0's, which it installs
// through): Helm's install (a get of each object, which must not exist,
// then a create, in Helm's kind order), reconcile (a get and a patch of
// each), upgrade (a get of each new object; a get and a create or patch of
// each object of the new release; a get and a delete of each object the old
// one had and the new one lacks), each object labeled and owned by the
// ClusterExtension (controller, blockOwnerDeletion); then its content
// manager's list and watch of each kind, in all namespaces, by label.
type operatorController struct {
	dyn dynamic.Interface
	ext *unstructured.Unstructured
}

func (oc *operatorController) install(objs []olmv1.Object) error {
	objs = helmOrder(objs)
	for _, o := range objs {
		if _, err := oc.get(o); !apierrors.IsNotFound(err) {
			return fmt.Errorf("install: conflict check of %s: %w", describe(o), cmpErr(err, "exists"))
		}
	}
	for _, o := range objs {
		if _, err := oc.client(o).Create(context.Background(), oc.owned(o), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("install: creating %s: %w", describe(o), err)
		}
	}
	return oc.watch(objs)
}

func (oc *operatorController) reconcile(objs []olmv1.Object) error {
	for _, o := range helmOrder(objs) {
		if err := oc.createOrPatch(o); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
	}
	return oc.watch(objs)
}

func (oc *operatorController) upgrade(current, target []olmv1.Object) error {
	target = helmOrder(target)
	for _, o := range target {
		if !slices.ContainsFunc(current, sameObject(o)) {
			if _, err := oc.get(o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("upgrade: conflict check of %s: %w", describe(o), cmpErr(err, "exists"))
			}
		}
	}
	for _, o := range target {
		if err := oc.createOrPatch(o); err != nil {
			return fmt.Errorf("upgrade: %w", err)
		}
	}
	for _, o := range helmOrder(current) {
		if slices.ContainsFunc(target, sameObject(o)) {
			continue
		}
		if _, err := oc.get(o); err != nil {
			return fmt.Errorf("upgrade: getting %s to delete it: %w", describe(o), err)
		}
		background := metav1.DeletePropagationBackground
		if err := oc.client(o).Delete(context.Background(), o.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
			return fmt.Errorf("upgrade: deleting %s: %w", describe(o), err)
		}
	}
	return oc.watch(target)
}

func (oc *operatorController) createOrPatch(o olmv1.Object) error {
	ctx := context.Background()
	if _, err := oc.get(o); apierrors.IsNotFound(err) {
		if _, err := oc.client(o).Create(ctx, oc.owned(o), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", describe(o), err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("getting %s: %w", describe(o), err)
	}
	patch, err := json.Marshal(oc.owned(o).Object)
	if err != nil {
		return err
	}
	if _, err := oc.client(o).Patch(ctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching %s: %w", describe(o), err)
	}
	return nil
}

// watch lists and watches each kind as operator-controller's content
// manager does: all namespaces, by its owner labels.
func (oc *operatorController) watch(objs []olmv1.Object) error {
	seen := map[schema.GroupVersionResource]bool{}
	selector := metav1.ListOptions{LabelSelector: ownerKindLabel + "=ClusterExtension," + ownerNameLabel + "=" + oc.ext.GetName()}
	for _, o := range objs {
		gvr := gvrOf(o)
		if seen[gvr] {
			continue
		}
		seen[gvr] = true
		if _, err := oc.dyn.Resource(gvr).List(context.Background(), selector); err != nil {
			return fmt.Errorf("watching %s: %w", gvr.GroupResource(), err)
		}
		w, err := oc.dyn.Resource(gvr).Watch(context.Background(), selector)
		if err != nil {
			return fmt.Errorf("watching %s: %w", gvr.GroupResource(), err)
		}
		w.Stop()
	}
	return nil
}

// operator-controller's labels on what it installs.
const (
	ownerKindLabel = "olm.operatorframework.io/owner-kind"
	ownerNameLabel = "olm.operatorframework.io/owner-name"
)

// owned is o labeled and owned as operator-controller's post-renderers make it.
func (oc *operatorController) owned(o olmv1.Object) *unstructured.Unstructured {
	u := o.DeepCopy()
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ownerKindLabel], labels[ownerNameLabel] = "ClusterExtension", oc.ext.GetName()
	u.SetLabels(labels)
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oc.ext.GetAPIVersion(), Kind: oc.ext.GetKind(), Name: oc.ext.GetName(),
		UID: oc.ext.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}})
	return u
}

func (oc *operatorController) get(o olmv1.Object) (*unstructured.Unstructured, error) {
	return oc.client(o).Get(context.Background(), o.GetName(), metav1.GetOptions{})
}

func (oc *operatorController) client(o olmv1.Object) dynamic.ResourceInterface {
	r := oc.dyn.Resource(gvrOf(o))
	if olmv1.Namespaced(o.GetKind()) {
		return r.Namespace(o.GetNamespace())
	}
	return r
}

func gvrOf(o olmv1.Object) schema.GroupVersionResource {
	gvk := o.GroupVersionKind()
	return o.Resource().WithVersion(gvk.Version)
}

func sameObject(a olmv1.Object) func(olmv1.Object) bool {
	return func(b olmv1.Object) bool {
		return a.GroupVersionKind() == b.GroupVersionKind() && a.GetNamespace() == b.GetNamespace() && a.GetName() == b.GetName()
	}
}

// describe names an object in errors; a binding with its role, which the
// API server's escalation error leaves out.
func describe(o olmv1.Object) string {
	s := o.GetKind() + " " + o.GetName()
	if kind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); kind != "" {
		name, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		s += fmt.Sprintf(" (binding %s %s)", kind, name)
	}
	return s
}

func cmpErr(err error, ifNil string) error {
	if err == nil {
		return errors.New(ifNil)
	}
	return err
}

// helmKindOrder is Helm's install order for the kinds a bundle holds.
var helmKindOrder = []string{"PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap", "CustomResourceDefinition",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment"}

func helmOrder(objs []olmv1.Object) []olmv1.Object {
	out := slices.Clone(objs)
	rank := func(o olmv1.Object) int {
		if i := slices.Index(helmKindOrder, o.GetKind()); i >= 0 {
			return i
		}
		return len(helmKindOrder)
	}
	slices.SortStableFunc(out, func(a, b olmv1.Object) int { return rank(a) - rank(b) })
	return out
}

// widgetBundles are the two versions of the test bundle: 0.2.0 changes the
// operator's rules (new generated role names), a ClusterRole's rules, a
// Service and the Deployment, adds a CRD, a PodDisruptionBudget and a
// ClusterRoleBinding to the built-in system:auth-delegator, drops a
// ConfigMap and a RoleBinding to the built-in view ClusterRole.
func widgetBundles(t *testing.T) (v1, v2 *olmv1.Bundle) {
	t.Helper()
	load := func(dir string) *olmv1.Bundle {
		b, err := olmv1.Load(os.DirFS("../olmv1/testdata/" + dir))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return load("widget-0.1.0"), load("widget-0.2.0")
}

// cycle installs v1, reconciles it, upgrades to v2, reconciles it and
// downgrades to v1, as the installer: every object of either version is
// created, patched or deleted by it at least once.
func cycle(oc *operatorController, ns string, v1, v2 *olmv1.Bundle) error {
	conv := func(b *olmv1.Bundle) ([]olmv1.Object, error) {
		return olmv1.Convert(b, olmv1.InstallOptions{Namespace: ns})
	}
	o1, err := conv(v1)
	if err != nil {
		return err
	}
	o2, err := conv(v2)
	if err != nil {
		return err
	}
	for _, step := range []func() error{
		func() error { return oc.install(o1) },
		func() error { return oc.reconcile(o1) },
		func() error { return oc.upgrade(o1, o2) },
		func() error { return oc.reconcile(o2) },
		func() error { return oc.upgrade(o2, o1) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// TestRulesOnAPIServer proves on a real API server that the rules derived
// for both versions of the widget bundle let the installer install,
// reconcile, upgrade and downgrade it as operator-controller does, and that
// dropping any one rule fails that with Forbidden naming the rule's
// resource (or URL, or name).
func TestRulesOnAPIServer(t *testing.T) {
	s := startAPIServer(t)
	v1, v2 := widgetBundles(t)
	derive := func(ns string) *RBAC {
		r, err := Rules(Options{Extension: extension, Namespace: ns}, v1, v2)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	oc := func(cfg *rest.Config) *operatorController {
		return &operatorController{dyn: dynamic.NewForConfigOrDie(cfg), ext: s.ext}
	}

	t.Run("all rules", func(t *testing.T) {
		ns := "widget-system"
		r := derive(ns)
		if err := cycle(oc(s.bind(t, ns, r, nil)), ns, v1, v2); err != nil {
			t.Fatalf("with the derived rules: %v", err)
		}
		s.cleanUp(t, v1, v2, ns)
	})

	r := derive("x")
	type indexed struct {
		role string // "ClusterRole" or the Role's namespace
		i    int
		rule rbacv1.PolicyRule
	}
	var all []indexed
	for i, rule := range r.ClusterRole.Rules {
		all = append(all, indexed{"ClusterRole", i, rule})
	}
	for _, role := range r.Roles {
		for i, rule := range role.Rules {
			all = append(all, indexed{"Role", i, rule})
		}
	}
	if len(all) < 20 {
		t.Fatalf("%d rules, want the widget bundle's 20 or more", len(all))
	}
	for n, ir := range all {
		t.Run(fmt.Sprintf("without %s rule %d %s", ir.role, ir.i, short(ir.rule)), func(t *testing.T) {
			ns := fmt.Sprintf("minus-%d", n)
			r := derive(ns)
			var rules []rbacv1.PolicyRule
			if ir.role == "ClusterRole" {
				rules = r.ClusterRole.Rules
			} else {
				rules = r.Roles[0].Rules
			}
			// The same rule, but in this namespace's derivation.
			dropped := rules[ir.i]
			cfg := s.bind(t, ns, r, func(rule rbacv1.PolicyRule) bool { return equalRule(rule, dropped) })
			err := cycle(oc(cfg), ns, v1, v2)
			s.cleanUp(t, v1, v2, ns)
			if err == nil {
				t.Fatalf("the cycle succeeded without %s", short(dropped))
			}
			if !apierrors.IsForbidden(errors.Unwrap(err)) && !apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "forbidden") {
				t.Fatalf("error = %v, want Forbidden", err)
			}
			m, ok := Explain(err.Error())
			if !ok || !names(m, dropped) {
				t.Errorf("error = %v\nexplained: %v, want it to name %s", err, m, short(dropped))
			}
			t.Logf("%v", err)
		})
	}
}

// names: what the installer lacked, as Explain reads it from the error, is
// what the dropped rule grants (names aside: the admission plugin that
// checks the ClusterExtension's finalizers does not say its name). Without
// bind on a role, the API server says what binding it would grant.
func names(m *Missing, dropped rbacv1.PolicyRule) bool {
	if slices.Contains(dropped.Verbs, "bind") {
		return m.Escalation
	}
	noNames := func(r rbacv1.PolicyRule) rbacv1.PolicyRule { r.ResourceNames = nil; return r }
	return slices.ContainsFunc(m.Rules, func(r rbacv1.PolicyRule) bool {
		return covers([]rbacv1.PolicyRule{noNames(dropped)}, noNames(r))
	})
}

func short(r rbacv1.PolicyRule) string {
	what := strings.Join(r.Resources, ",")
	if len(r.NonResourceURLs) > 0 {
		what = strings.Join(r.NonResourceURLs, ",")
	}
	s := fmt.Sprintf("%s %s", what, strings.Join(r.Verbs, ","))
	if len(r.ResourceNames) > 0 {
		s += fmt.Sprintf(" (%d names)", len(r.ResourceNames))
	}
	return s
}

// cleanUp deletes, as the admin, the cluster-scoped objects of both
// bundles (the garbage collector's job, which envtest does not run), and
// waits for the CRDs to go.
func (s *apiServer) cleanUp(t *testing.T, v1, v2 *olmv1.Bundle, ns string) {
	t.Helper()
	s.cleanUpBundles(t, ns, v1, v2)
}

func (s *apiServer) cleanUpBundles(t *testing.T, ns string, bundles ...*olmv1.Bundle) {
	t.Helper()
	ctx := context.Background()
	oc := &operatorController{dyn: s.dyn, ext: s.ext}
	for _, b := range bundles {
		objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if olmv1.Namespaced(o.GetKind()) {
				continue
			}
			if err := oc.client(o).Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			// A CRD deleted as soon as it was created can wait long
			// for its cleanup finalizer; it has no CRs to clean up.
			if o.GetKind() == "CustomResourceDefinition" {
				_, err := oc.client(o).Patch(ctx, o.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
			}
		}
	}
	crds := s.dyn.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := crds.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 1, nil // the ClusterExtension's
	})
	if err != nil {
		t.Fatalf("waiting for the bundle's CRDs to go: %v", err)
	}
}

// TestEscalateByNameDoesNotAllowCreate shows why the rules hold the
// operator's rules instead of `escalate` limited by name: the API server
// checks escalate on a create without the new role's name.
func TestEscalateByNameDoesNotAllowCreate(t *testing.T) {
	s := startAPIServer(t)
	ctx := context.Background()
	ns := "escalate"
	r := &RBAC{
		ServiceAccount: &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "installer"}},
		ClusterRole: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "installer"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"create"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "patch", "escalate"}, ResourceNames: []string{"operator"}},
		}},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "installer"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "installer"}}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "installer"}},
	}
	cs := kubernetes.NewForConfigOrDie(s.bind(t, ns, r, nil))
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "operator"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not currently held") {
		t.Fatalf("creating a ClusterRole with escalate on its name only: error = %v, want Forbidden (escalation)", err)
	}
	// Once it exists, escalate by name does allow changing it.
	role.Rules = nil
	if _, err := s.cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`)
	if _, err := cs.RbacV1().ClusterRoles().Patch(ctx, "operator", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the ClusterRole with escalate on its name: %v", err)
	}
}
