package doctor

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBindingSubjects(t *testing.T) {
	user := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: n} }
	binding := func(name string, labels map[string]string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Subjects: subjects}
	}
	got := bindingSubjects([]rbacv1.ClusterRoleBinding{
		binding("b", nil, user("alice"), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "ops", Name: "deployer"}),
		binding("a", nil, user("alice"), rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:masters"}),
		binding("system:controller:gc", map[string]string{bootstrapLabel: "rbac-defaults"}, user("system:gc")),
	})
	var names []string
	for _, w := range got {
		names = append(names, w.name()+" "+w.bindings[0]+" "+w.bindings[len(w.bindings)-1])
	}
	want := []string{"ServiceAccount ops/deployer b b", "User alice b a"}
	if !slices.Equal(names, want) {
		t.Errorf("bindingSubjects = %q, want %q", names, want)
	}
	if u, g := got[0].identity(); u != "system:serviceaccount:ops:deployer" || !slices.Contains(g, "system:serviceaccounts:ops") {
		t.Errorf("identity = %s %v", u, g)
	}
}
