package olm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestGrants(t *testing.T) {
	rule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.Name = "op.v0.1.0"
	csv.Spec.InstallStrategy.StrategySpec = v1alpha1.StrategyDetailsDeployment{
		Permissions:        []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: "op", Rules: []rbacv1.PolicyRule{rule}}},
		ClusterPermissions: []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: "op", Rules: []rbacv1.PolicyRule{rule}}},
	}
	tests := []struct {
		name    string
		targets []string
		want    []string
	}{{
		name:    "OwnNamespace: a Role in the operator's namespace",
		targets: []string{"ops"},
		want: []string{"ClusterRole/op.v0.1.0-op-cluster-0", "ClusterRoleBinding/op.v0.1.0-op-cluster-0",
			"Role ops/op.v0.1.0-op-0", "RoleBinding ops/op.v0.1.0-op-0", "ServiceAccount ops/op"},
	}, {
		name:    "SingleNamespace: Roles there and in the operator's namespace",
		targets: []string{"apps"},
		want: []string{"ClusterRole/op.v0.1.0-op-cluster-0", "ClusterRoleBinding/op.v0.1.0-op-cluster-0",
			"Role apps/op.v0.1.0-op-0", "Role ops/op.v0.1.0-op-0", "RoleBinding apps/op.v0.1.0-op-0", "RoleBinding ops/op.v0.1.0-op-0", "ServiceAccount ops/op"},
	}, {
		name: "AllNamespaces: the permissions cluster-wide",
		want: []string{"ClusterRole/op.v0.1.0-op-0", "ClusterRole/op.v0.1.0-op-cluster-0", "ClusterRoleBinding/op.v0.1.0-op-0",
			"ClusterRoleBinding/op.v0.1.0-op-cluster-0", "ServiceAccount ops/op"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, o := range Grants(csv, GrantOptions{Namespace: "ops", Targets: tt.targets}) {
				got = append(got, describeObject(o))
				if b, ok := o.(*rbacv1.RoleBinding); ok && (b.Subjects[0].Namespace != "ops" || b.Subjects[0].Name != "op") {
					t.Errorf("%s binds %+v", describeObject(o), b.Subjects)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func describeObject(o client.Object) string {
	kind := fmt.Sprintf("%T", o)
	kind = kind[slices.Index([]byte(kind), '.')+1:]
	if o.GetNamespace() == "" {
		return kind + "/" + o.GetName()
	}
	return kind + " " + o.GetNamespace() + "/" + o.GetName()
}
