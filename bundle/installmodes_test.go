package bundle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/operator/metricsauth"
	"github.com/chartpilot/chartpilot/rbac/rbactest"
	"github.com/chartpilot/chartpilot/scaffold"
)

// olmInstall grants a CSV's permissions as OLM does for an install mode: the
// clusterPermissions in a ClusterRole; the permissions in a Role in the
// operator's namespace and each target namespace, or, for AllNamespaces,
// in a ClusterRole. It returns the ServiceAccount's user name.
func olmInstall(t *testing.T, cs kubernetes.Interface, spec v1alpha1.StrategyDetailsDeployment, mode v1alpha1.InstallModeType, installNS string, targets []string) string {
	t.Helper()
	ctx := context.Background()
	for _, ns := range append([]string{installNS}, targets...) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ServiceAccounts(installNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator", Namespace: installNS}}
	clusterWide := func(name string, rules []rbacv1.PolicyRule) {
		name = installNS + "-" + name
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	inNamespace := func(ns string, rules []rbacv1.PolicyRule) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns}, Rules: rules}
		if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "operator"}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range spec.ClusterPermissions {
		clusterWide("cluster", p.Rules)
	}
	for _, p := range spec.Permissions {
		if mode == v1alpha1.InstallModeTypeAllNamespaces {
			clusterWide("all-namespaces", p.Rules)
			continue
		}
		for _, ns := range append([]string{installNS}, slices.DeleteFunc(slices.Clone(targets), func(n string) bool { return n == installNS })...) {
			inNamespace(ns, p.Rules)
		}
	}
	return "system:serviceaccount:" + installNS + ":operator"
}

// eventually polls may until it says yes, for up to 10 s: the API
// server's RBAC authorizer learns of new bindings through its informers.
func eventually(t *testing.T, cs kubernetes.Interface, user, verb, group, resource, ns string) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if may(t, cs, user, verb, group, resource, ns) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// may asks the API server whether user may do verb on resource in ns.
func may(t *testing.T, cs kubernetes.Interface, user, verb, group, resource, ns string) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		Groups:             []string{"system:serviceaccounts", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource}}}
	res, err := cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), review, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Status.Allowed
}

// TestPermissionsInEveryInstallMode grants a generated bundle's permissions
// and clusterPermissions on a real API server as OLM does in each install
// mode the CSV declares, then, as the operator's ServiceAccount, installs,
// upgrades and uninstalls the chart in each namespace the operator watches.
// Outside them (but for AllNamespaces) it may not touch secrets.
func TestPermissionsInEveryInstallMode(t *testing.T) {
	s := rbactest.Start(t)
	cs := kubernetes.NewForConfigOrDie(s.Admin)
	tests := []struct {
		chart   string
		upgrade map[string]any
	}{
		{chart: "webapp", upgrade: map[string]any{"autoscaling": map[string]any{"enabled": true}}},
		{chart: "clusterwide", upgrade: map[string]any{"description": "upgraded"}},
	}
	for i, tt := range tests {
		dir := newProject(t, tt.chart, scaffold.Options{})
		mustGenerate(t, dir, GenerateOptions{})
		csv := readCSV(t, dir)
		spec := csv.Spec.InstallStrategy.StrategySpec
		var modes []v1alpha1.InstallModeType
		for _, m := range csv.Spec.InstallModes {
			if m.Supported {
				modes = append(modes, m.Type)
			}
		}
		if !slices.Contains(modes, v1alpha1.InstallModeTypeOwnNamespace) || !slices.Contains(modes, v1alpha1.InstallModeTypeAllNamespaces) {
			t.Fatalf("%s: install modes %v", tt.chart, modes)
		}
		for j, mode := range modes {
			t.Run(tt.chart+"/"+string(mode), func(t *testing.T) {
				installNS := fmt.Sprintf("op-%d-%d", i, j)
				targets := map[v1alpha1.InstallModeType][]string{
					v1alpha1.InstallModeTypeOwnNamespace:    {installNS},
					v1alpha1.InstallModeTypeSingleNamespace: {installNS + "-a"},
					v1alpha1.InstallModeTypeMultiNamespace:  {installNS + "-a", installNS + "-b"},
					v1alpha1.InstallModeTypeAllNamespaces:   {installNS + "-any"},
				}[mode]
				owned := slices.DeleteFunc(slices.Clone(targets), func(n string) bool { return n == installNS })
				user := olmInstall(t, cs, spec, mode, installNS, owned)
				// Leader election: the Lease in the operator's own namespace.
				if !eventually(t, cs, user, "create", "coordination.k8s.io", "leases", installNS) {
					t.Errorf("the operator may not create its leader election Lease in %s", installNS)
				}
				for _, ns := range targets {
					cfg := rest.CopyConfig(s.Admin)
					cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
					op := &rbactest.Operator{Namespace: ns, User: user, Config: cfg}
					if err := s.HelmCycle(op, filepath.Join(dir, "helm-charts", tt.chart), tt.upgrade, nil); err != nil {
						t.Errorf("in namespace %s as %s: %v", ns, user, err)
					}
				}
				elsewhere := installNS + "-elsewhere"
				if got, want := may(t, cs, user, "list", "", "secrets", elsewhere), mode == v1alpha1.InstallModeTypeAllNamespaces; got != want {
					t.Errorf("may list secrets in a namespace it does not watch: %v, want %v", got, want)
				}
			})
		}
	}
}

// A chart whose objects are all namespaced gets no cluster-wide rule on a
// namespaced resource, and none but the metrics endpoint's reviews (which
// are cluster-scoped) without backup APIs.
func TestNamespacedChartHasNoClusterWideRules(t *testing.T) {
	dir := generatedProject(t)
	spec := readCSV(t, dir).Spec.InstallStrategy.StrategySpec
	for _, p := range spec.ClusterPermissions {
		for _, r := range p.Rules {
			for _, res := range r.Resources {
				if !slices.Contains([]string{"storageclasses", "volumesnapshotclasses", "volumesnapshotcontents", "tokenreviews", "subjectaccessreviews"}, res) {
					t.Errorf("clusterPermissions grant %s %v", res, r.Verbs)
				}
			}
		}
	}
	// Without the backup APIs (as adopt leaves a project): nothing
	// cluster-wide but the reviews of the metrics' scrapers.
	for _, plural := range []string{"webappbackups", "webapprestores", "webappbackupschedules", "webapprestoregrants"} {
		removeBackupAPI(t, dir, plural)
	}
	if err := scaffold.Generate(scaffold.GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, dir, GenerateOptions{})
	spec = readCSV(t, dir).Spec.InstallStrategy.StrategySpec
	same := func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Verbs, b.Verbs) && len(a.ResourceNames)+len(b.ResourceNames) == 0
	}
	if len(spec.ClusterPermissions) != 1 || !slices.EqualFunc(spec.ClusterPermissions[0].Rules, metricsauth.AuthRules(), same) {
		t.Errorf("clusterPermissions: %+v, want only %+v", spec.ClusterPermissions, metricsauth.AuthRules())
	}
	var names []string
	for _, r := range spec.Permissions[0].Rules {
		names = append(names, r.Resources...)
	}
	if slices.Contains(names, "pods/exec") || !slices.Contains(names, "secrets") {
		t.Errorf("permissions on %s", strings.Join(names, ", "))
	}
}

// removeBackupAPI removes a backup kind's CRD and sample from a project, as
// in a project adopted from operator-sdk, which has none.
func removeBackupAPI(t *testing.T, dir, plural string) {
	t.Helper()
	files := map[string]string{
		"config/crd":     "bases/charts.example.com_" + plural + ".yaml",
		"config/samples": "charts.example.com_v1alpha1_" + strings.TrimSuffix(plural, "s") + ".yaml",
	}
	for kustDir, file := range files {
		if err := os.Remove(filepath.Join(dir, kustDir, filepath.FromSlash(file))); err != nil {
			t.Fatal(err)
		}
		kust := filepath.Join(dir, kustDir, "kustomization.yaml")
		data, err := os.ReadFile(kust)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(data), "- "+file+"\n", "", 1)
		if edited == string(data) {
			t.Fatalf("%s does not list %s", kust, file)
		}
		if err := os.WriteFile(kust, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
