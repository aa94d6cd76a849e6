package installer

import (
	"strings"
	"testing"
)

// The messages are the API server's, as TestRulesOnAPIServer met them.
func TestExplain(t *testing.T) {
	tests := []struct {
		name, msg string
		// want is Missing.String's start, "" for not an RBAC refusal.
		want string
	}{
		{name: "create, cluster scope",
			msg:  `install: creating CustomResourceDefinition widgets.example.com: customresourcedefinitions.apiextensions.k8s.io is forbidden: User "system:serviceaccount:minus-1:widget-operator-installer" cannot create resource "customresourcedefinitions" in API group "apiextensions.k8s.io" at the cluster scope`,
			want: "the installer ServiceAccount may not create apiextensions.k8s.io customresourcedefinitions cluster-wide"},
		{name: "get by name, in a namespace",
			msg:  `conflict check of Secret widget-token: secrets "widget-token" is forbidden: User "system:serviceaccount:minus-21:widget-operator-installer" cannot get resource "secrets" in API group "" in the namespace "minus-21"`,
			want: "the installer ServiceAccount may not get core secrets named widget-token in namespace minus-21"},
		{name: "list, for the watch",
			msg:  `watching deployments.apps: deployments.apps is forbidden: User "system:serviceaccount:minus-2:widget-operator-installer" cannot list resource "deployments" in API group "apps" at the cluster scope`,
			want: "the installer ServiceAccount may not list apps deployments cluster-wide"},
		{name: "escalation",
			msg: `creating ClusterRole widget-metrics-reader: clusterroles.rbac.authorization.k8s.io "widget-metrics-reader" is forbidden: user "system:serviceaccount:minus-13:widget-operator-installer" (groups=["system:serviceaccounts" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{NonResourceURLs:["/metrics"], Verbs:["get"]}
{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "create" "update"]}`,
			want: "the installer ServiceAccount may not grant what it does not hold: get /metrics; get,create,update coordination.k8s.io leases;"},
		{name: "escalation with names",
			msg:  `is attempting to grant RBAC permissions not currently held: {APIGroups:["apps"], Resources:["deployments/finalizers"], ResourceNames:["x"], Verbs:["update"]}`,
			want: "the installer ServiceAccount may not grant what it does not hold: update apps deployments/finalizers named x;"},
		{name: "finalizers",
			msg:  `creating ServiceAccount widget-controller: serviceaccounts "widget-controller" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>`,
			want: "the installer ServiceAccount may not update olm.operatorframework.io clusterextensions/finalizers cluster-wide"},
		{name: "not RBAC", msg: `bundle contains unsupported resource: Name: x, Kind: NetworkPolicy`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := Explain(tt.msg)
			if ok != (tt.want != "") {
				t.Fatalf("Explain ok = %t, want %t", ok, tt.want != "")
			}
			if !ok {
				return
			}
			if got := m.String(); !strings.HasPrefix(got, tt.want) || !strings.Contains(got, "chartpilot bundle rbac --olm-v1") {
				t.Errorf("explanation %q, want it to start %q and say the fix", got, tt.want)
			}
		})
	}
}
