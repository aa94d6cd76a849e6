package rbac

import (
	"testing"

	"github.com/chartpilot/chartpilot/chart"
)

// Objects a chart writes into namespaces of their own (kube-system, a list
// of namespaces in its values) are out of reach of a Role in the watched
// namespaces, which is all OLM grants `permissions` in: their rules, and what
// the operator must hold to create the chart's Roles there, are cluster-wide.
// Objects in the release's namespace stay namespaced.
func TestFixedNamespacesAreClusterWide(t *testing.T) {
	c, err := chart.Load("testdata/charts/fixedns")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "fixedns"}, WatchNamespace: "system"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		group, resource, verb string
		namespaced            bool
	}{
		{"", "configmaps", "create", true},
		{"rbac.authorization.k8s.io", "rolebindings", "create", false},
		{"rbac.authorization.k8s.io", "roles", "create", false},
		{"rbac.authorization.k8s.io", "roles", "bind", false},
		{"", "pods", "list", false},
	}
	for _, tt := range tests {
		found := false
		for _, r := range res.Rules {
			if r.Namespaced == tt.namespaced && contains(r.APIGroups, tt.group) && contains(r.Resources, tt.resource) && contains(r.Verbs, tt.verb) {
				found = true
			}
		}
		if !found {
			t.Errorf("no rule granting %s %s/%s with namespaced=%v; rules: %+v", tt.verb, tt.group, tt.resource, tt.namespaced, res.Rules)
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
