package installer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/dynamic"

	"github.com/chartpilot/chartpilot"
	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/bundle/olmv1"
	"github.com/chartpilot/chartpilot/scaffold"
)

// helloBundles generate the example operator's bundles, 0.1.0 and 0.2.0
// (the repository's top level is its project: what `make bundle` does, then
// what the demo does for the next release: the chart's new files, generate,
// make bundle), from a copy of the project: nothing is written into the
// repository.
func helloBundles(t *testing.T) (v1, v2 *olmv1.Bundle) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../..")); err != nil {
		t.Fatal(err)
	}
	gen := func(version string) *olmv1.Bundle {
		created := time.Unix(1767225600, 0).UTC()
		res, err := bundle.Generate(context.Background(), bundle.GenerateOptions{Dir: dir, OutputDir: "build/" + version, Version: version,
			Images: map[string]string{"controller": "example.com/hello-operator:v" + version}, CreatedAt: &created, Out: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		b, err := olmv1.Load(os.DirFS(res.Dir))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	v1 = gen("0.1.0")
	if err := chartpilot.WriteExampleUpgrade(filepath.Join(dir, "helm-charts", chartpilot.ExampleChart)); err != nil {
		t.Fatal(err)
	}
	if err := scaffold.Generate(scaffold.GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return v1, gen("0.2.0")
}

// documentedRules follow OLM v1's documentation procedure "Derive minimal
// ServiceAccount required for ClusterExtension Installation and Management"
// (operator-controller v1.2.0, docs/howto/derive-service-account.md) to the
// letter, as a user would by hand. ClusterRole: (1) clusterroles and
// clusterrolebindings create,list,watch, and get,update,patch,delete by the
// names operator-controller generates; (2) the same two rules for the CRDs;
// (3) update on the ClusterExtension's finalizers; (4) the bundle's
// cluster-scoped objects, added to those names (or two rules per other
// kind); (5) every rule of the CSV's permissions and clusterPermissions,
// overlaps once. Role: create, and get,list,watch,update,patch,delete by
// name, for the Deployments (1), ServiceAccounts (2, with list and watch on
// create's rule) and each namespaced kind of the bundle (3).
func documentedRules(t *testing.T, b *olmv1.Bundle, ns, ext string) (cluster, role []rbacv1.PolicyRule) {
	t.Helper()
	objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	type kind struct{ group, resource string }
	names := map[kind][]string{}
	var clusterKinds, nsKinds []kind
	for _, o := range objs {
		k := kind{o.Resource().Group, o.Resource().Resource}
		list := &clusterKinds
		if olmv1.Namespaced(o.GetKind()) {
			list = &nsKinds
		}
		if !slices.Contains(*list, k) {
			*list = append(*list, k)
		}
		names[k] = append(names[k], o.GetName())
	}
	manage := []string{"get", "update", "patch", "delete"}
	// Steps 1, 2 and 4: the RBAC kinds first, as the procedure orders them.
	slices.SortStableFunc(clusterKinds, func(a, b kind) int {
		rank := func(k kind) int {
			if k.group == rbacv1.GroupName {
				return 0
			}
			return 1
		}
		return rank(a) - rank(b)
	})
	for _, k := range clusterKinds {
		cluster = append(cluster,
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: []string{"create", "list", "watch"}},
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: manage, ResourceNames: names[k]})
	}
	cluster = append(cluster, rbacv1.PolicyRule{APIGroups: []string{ExtensionGroup}, Resources: []string{ExtensionFinalizers}, Verbs: []string{"update"}, ResourceNames: []string{ext}})
	s := b.CSV.Spec.InstallStrategy.StrategySpec
	for _, p := range slices.Concat(s.ClusterPermissions, s.Permissions) {
		for _, r := range p.Rules {
			if !slices.ContainsFunc(cluster, func(c rbacv1.PolicyRule) bool { return equalRule(c, r) }) {
				cluster = append(cluster, r)
			}
		}
	}
	for _, k := range nsKinds {
		create := []string{"create"}
		get := []string{"get", "list", "watch", "update", "patch", "delete"}
		if k.resource == "serviceaccounts" {
			create, get = []string{"create", "list", "watch"}, manage
		}
		role = append(role,
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: create},
			rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: get, ResourceNames: names[k]})
	}
	return cluster, role
}

// TestHelloRuleCounts gives the numbers of the example operator's bundle:
// the derived rules against a hand-written cluster-admin (one rule: every
// verb on every resource of every group) and against the documentation's
// procedure.
func TestHelloRuleCounts(t *testing.T) {
	b, b2 := helloBundles(t)
	r, err := Rules(Options{Namespace: "hello-system"}, b)
	if err != nil {
		t.Fatal(err)
	}
	upgrade, err := Rules(Options{Namespace: "hello-system"}, b, b2)
	if err != nil {
		t.Fatal(err)
	}
	cluster, role := documentedRules(t, b, "hello-system", "hello-operator")
	held := heldRulesOf(t, b, "hello-system")
	own := 0
	for _, rl := range slices.Concat(r.ClusterRole.Rules, roleRules(r)) {
		if !slices.ContainsFunc(held, func(h rbacv1.PolicyRule) bool { return equalRule(h, rl) }) {
			own++
		}
	}
	t.Logf("hello-operator.v0.1.0: derived %d rules (%d the installer's own, %d the operator's held to grant them); "+
		"documented procedure %d (ClusterRole %d, Role %d); cluster-admin 1; the upgrade to 0.2.0 %d",
		r.Count(), own, r.Count()-own, len(cluster)+len(role), len(cluster), len(role), upgrade.Count())
	if r.Count() != 35 || own != 9 || len(cluster)+len(role) != 38 {
		t.Errorf("counts changed: derived %d (own %d), documented %d", r.Count(), own, len(cluster)+len(role))
	}
}

func roleRules(r *RBAC) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, role := range r.Roles {
		out = append(out, role.Rules...)
	}
	return out
}

// heldRulesOf are the rules of the roles a bundle makes in namespace ns.
func heldRulesOf(t *testing.T, b *olmv1.Bundle, ns string) []rbacv1.PolicyRule {
	t.Helper()
	objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacv1.PolicyRule
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
			out = append(out, rolesRules(t, o)...)
		}
	}
	return out
}

// TestHelloOnAPIServer installs the example operator's bundle as
// operator-controller does, with the derived rules (it succeeds, and so do
// the upgrade to 0.2.0 and back) and with the documentation procedure's (it
// fails, Forbidden).
func TestHelloOnAPIServer(t *testing.T) {
	s := startAPIServer(t)
	b, b2 := helloBundles(t)
	oc := func(ns string, r *RBAC) *operatorController {
		return &operatorController{dyn: dynamic.NewForConfigOrDie(s.bind(t, ns, r, nil)), ext: s.ext}
	}
	install := func(oc *operatorController, ns string) error {
		objs, err := olmv1.Convert(b, olmv1.InstallOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if err := oc.install(objs); err != nil {
			return err
		}
		return oc.reconcile(objs)
	}

	derived, err := Rules(Options{Namespace: "hello-system", Extension: extension}, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := install(oc("hello-system", derived), "hello-system"); err != nil {
		t.Fatalf("with the derived rules: %v", err)
	}
	s.cleanUpBundles(t, "hello-system", b)

	upgrade, err := Rules(Options{Namespace: "hello-upgrade", Extension: extension}, b, b2)
	if err != nil {
		t.Fatal(err)
	}
	if err := cycle(oc("hello-upgrade", upgrade), "hello-upgrade", b, b2); err != nil {
		t.Fatalf("upgrading to 0.2.0 with the derived rules: %v", err)
	}
	s.cleanUpBundles(t, "hello-upgrade", b, b2)

	// The documented procedure's rules, and each permission the API
	// server then refuses added in turn until the install goes through.
	var lacked []rbacv1.PolicyRule
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("the documented rules still lack more than %v", lacked)
		}
		ns := fmt.Sprintf("hello-documented-%d", i)
		documented := &RBAC{ServiceAccount: derived.ServiceAccount.DeepCopy(), ClusterRole: derived.ClusterRole.DeepCopy(), ClusterRoleBinding: derived.ClusterRoleBinding.DeepCopy()}
		documented.ServiceAccount.Namespace = ns
		documented.ClusterRoleBinding.Subjects[0].Namespace = ns
		var role []rbacv1.PolicyRule
		documented.ClusterRole.Rules, role = documentedRules(t, b, ns, extension)
		documented.ClusterRole.Rules = append(documented.ClusterRole.Rules, lacked...)
		documented.Roles = []*rbacv1.Role{{ObjectMeta: derived.Roles[0].ObjectMeta, Rules: role}}
		documented.Roles[0].Namespace = ns
		documented.RoleBindings = []*rbacv1.RoleBinding{derived.RoleBindings[0].DeepCopy()}
		documented.RoleBindings[0].Namespace, documented.RoleBindings[0].Subjects[0].Namespace = ns, ns
		err := install(oc(ns, documented), ns)
		s.cleanUpBundles(t, ns, b)
		if err == nil {
			break
		}
		m, ok := Explain(err.Error())
		if !ok {
			t.Fatalf("with the documented procedure's rules: error = %v, want Forbidden", err)
		}
		t.Logf("the documented procedure's rules lack: %s", m.Rules)
		lacked = append(lacked, m.Rules...)
	}
	if len(lacked) == 0 {
		t.Fatal("the documented procedure's rules installed the bundle")
	}
}
