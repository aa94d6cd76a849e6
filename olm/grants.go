package olm

import (
	"fmt"
	"slices"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GrantOptions say where OLM installs a CSV.
type GrantOptions struct {
	// Namespace is the operator's namespace (its OperatorGroup's). Required.
	Namespace string
	// Targets are the namespaces the OperatorGroup targets; empty means all
	// namespaces (AllNamespaces).
	Targets []string
	// Prefix starts the name of every role and binding (default the CSV's
	// name), so that two grants on one cluster do not collide.
	Prefix string
}

// Grants returns the ServiceAccounts and RBAC OLM (v0) makes for the
// install strategy of csv: each permissions entry as a Role and RoleBinding
// in the operator's namespace and in every target namespace, or as a
// ClusterRole and ClusterRoleBinding when the OperatorGroup targets all
// namespaces; each clusterPermissions entry as a ClusterRole and
// ClusterRoleBinding. Tests grant an operator what OLM would with them.
func Grants(csv *v1alpha1.ClusterServiceVersion, opts GrantOptions) []client.Object {
	spec := csv.Spec.InstallStrategy.StrategySpec
	prefix := opts.Prefix
	if prefix == "" {
		prefix = csv.Name
	}
	var out []client.Object
	var accounts []string
	for _, p := range slices.Concat(spec.Permissions, spec.ClusterPermissions) {
		if !slices.Contains(accounts, p.ServiceAccountName) {
			accounts = append(accounts, p.ServiceAccountName)
			out = append(out, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: p.ServiceAccountName, Namespace: opts.Namespace}})
		}
	}
	subjects := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: opts.Namespace}}
	}
	clusterWide := func(name string, p v1alpha1.StrategyDeploymentPermissions) {
		out = append(out,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects(p.ServiceAccountName),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
	namespaces := append([]string{opts.Namespace}, opts.Targets...)
	slices.Sort(namespaces)
	namespaces = slices.Compact(namespaces)
	for i, p := range spec.Permissions {
		name := fmt.Sprintf("%s-%s-%d", prefix, p.ServiceAccountName, i)
		if len(opts.Targets) == 0 {
			clusterWide(name, p)
			continue
		}
		for _, ns := range namespaces {
			out = append(out,
				&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: p.Rules},
				&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subjects(p.ServiceAccountName),
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
		}
	}
	for i, p := range spec.ClusterPermissions {
		clusterWide(fmt.Sprintf("%s-%s-cluster-%d", prefix, p.ServiceAccountName, i), p)
	}
	return out
}
