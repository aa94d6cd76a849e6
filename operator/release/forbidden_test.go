package release

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// A custom resource whose values make the chart grant a rule the operator
// does not hold (a Role naming the release's pod) fails with
// ErrRulesNotHeld naming that rule and the command that derives the RBAC
// from those values; once the operator holds the rule, it installs.
func TestRulesNotHeld(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	held := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps", "services"}, Verbs: []string{"*"}},
		// Not "*", which holds escalate: the right to grant anything.
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	}
	op := f.operator(held)
	req := f.request(map[string]any{"role": true})
	_, err := op.Reconcile(ctx, req)
	if !errors.Is(err, ErrRulesNotHeld) || !errors.Is(err, ErrInstallFailed) {
		t.Fatalf("err = %v, want ErrRulesNotHeld and ErrInstallFailed", err)
	}
	for _, want := range []string{`Role app-reader: {apiGroups: [""], resources: ["pods"], verbs: [get], resourceNames: ["app-pod"]} in namespace ` + f.ns,
		"chartpilot generate --values FILE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Held, the same values install: the check named what was missing.
	f.grant("pods-of-app", append(held, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}, ResourceNames: []string{"app-pod"}}))
	// The authorizer sees a new binding within moments, not at once.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return op.allowed(ctx, authorizationv1.ResourceAttributes{Namespace: f.ns, Resource: "pods", Verb: "get", Name: "app-pod"})
	}); err != nil {
		t.Fatalf("the operator never held the rule granted: %v", err)
	}
	if _, err := op.Reconcile(ctx, req); err != nil {
		t.Fatalf("with the rule held: %v", err)
	}
}

// operator is a release client acting as a ServiceAccount of f's
// namespace that holds rules there.
func (f *fixture) operator(rules []rbacv1.PolicyRule) *Client {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.cs.CoreV1().ServiceAccounts(f.ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.grant("operator", rules)
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + f.ns + ":operator"}
	c, err := NewClient(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	// The authorizer learns of the binding moments after it is made.
	first := authorizationv1.ResourceAttributes{Namespace: f.ns, Group: rules[0].APIGroups[0], Resource: rules[0].Resources[0], Verb: rules[0].Verbs[0]}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return c.allowed(ctx, first)
	}); err != nil {
		f.t.Fatalf("the operator's binding was not in force within 30s: %v", err)
	}
	return c
}

// grant binds a Role holding rules, named name, to f's operator.
func (f *fixture) grant(name string, rules []rbacv1.PolicyRule) {
	f.t.Helper()
	ctx := context.Background()
	rbac := f.cs.RbacV1()
	if _, err := rbac.Roles(f.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator", Namespace: f.ns}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}
	if _, err := rbac.RoleBindings(f.ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}
