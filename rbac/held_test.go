package rbac

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestReadRules(t *testing.T) {
	tests := []struct {
		name, rules string
		want        []rbacv1.PolicyRule
		bad         []string
	}{{
		name:  "well formed",
		rules: `[{apiGroups: [""], resources: [pods], verbs: [get, list]}, {nonResourceURLs: [/metrics], verbs: [get]}]`,
		want:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}, {NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, {
		name:  "a string where a list belongs",
		rules: `[{apiGroups: [""], resources: pods, verbs: [get]}, {apiGroups: [apps], resources: [deployments], verbs: [list]}]`,
		want:  []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list"}}},
		bad:   []string{`rules[0].resources is the string "pods", not a list of strings`},
	}, {
		name:  "an item of the wrong type",
		rules: `[{apiGroups: [""], resources: [secrets], resourceNames: [{name: x}], verbs: [get]}]`,
		bad:   []string{"rules[0].resourceNames is a list whose item 0 is an object, not a string"},
	}, {
		name:  "rules an object",
		rules: `{apiGroups: [""]}`,
		bad:   []string{"rules is an object, not a list"},
	}, {
		name:  "a rule not an object",
		rules: `[true]`,
		bad:   []string{"rules[0] is true (a boolean), not an object"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal([]byte(tt.rules), &v); err != nil {
				t.Fatal(err)
			}
			got, badFields := readRules(v)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rules = %+v, want %+v", got, tt.want)
			}
			var bad []string
			for _, b := range badFields {
				bad = append(bad, b.msg)
			}
			if !reflect.DeepEqual(bad, tt.bad) {
				t.Errorf("bad = %q, want %q", bad, tt.bad)
			}
		})
	}
}

func TestAdminWarnings(t *testing.T) {
	rule := func(namespaced bool, groups, resources, verbs string, names ...string) Rule {
		return Rule{Namespaced: namespaced, Reasons: []string{"held for role x"}, PolicyRule: rbacv1.PolicyRule{
			APIGroups: strings.Split(groups, ","), Resources: strings.Split(resources, ","), Verbs: strings.Split(verbs, ","), ResourceNames: names}}
	}
	tests := []struct {
		name string
		rule Rule
		// role: the operator watches one namespace (namespaced rules in a Role).
		role bool
		want string
	}{
		{name: "everything", rule: rule(false, "*", "*", "*"), want: "every verb it lists on every resource"},
		{name: "read everything", rule: rule(false, "*", "*", "get,list"), want: "every verb it lists on every resource"},
		{name: "namespaced everything, watching all namespaces", rule: rule(true, "*", "*", "*"), want: "every verb"},
		{name: "namespaced everything in one namespace's Role", rule: rule(true, "*", "*", "*"), role: true},
		{name: "escalate on roles", rule: rule(false, "rbac.authorization.k8s.io", "clusterroles", "escalate"), want: "escalate or bind on any role"},
		{name: "bind on named roles only", rule: rule(false, "rbac.authorization.k8s.io", "clusterroles", "bind", "view")},
		{name: "impersonation", rule: rule(false, "", "users,groups", "impersonate"), want: "impersonation"},
		{name: "an ordinary rule", rule: rule(true, "apps", "deployments", "get,list,watch,create,update,patch,delete")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &Result{Rules: []Rule{tt.rule}}
			if tt.role {
				res.Role = &rbacv1.Role{}
			}
			got := adminWarnings(res)
			if tt.want == "" {
				if len(got) > 0 {
					t.Errorf("warnings %q, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Message, tt.want) || !strings.Contains(got[0].Message, "held for role x") {
				t.Errorf("warnings %q, want one saying %q and the reason", got, tt.want)
			}
		})
	}
}

func TestServedAPIVersions(t *testing.T) {
	tests := []struct {
		kube       int
		has, lacks []string
	}{
		{36, []string{"v1", "v1/ConfigMap", "policy/v1", "policy/v1/PodDisruptionBudget", "apiregistration.k8s.io/v1"},
			[]string{"policy/v1beta1", "policy/v1beta1/PodSecurityPolicy", "batch/v1beta1/CronJob", "resource.k8s.io/v1beta1", "admissionregistration.k8s.io/v1alpha1"}},
		{21, []string{"policy/v1beta1/PodSecurityPolicy", "batch/v1beta1/CronJob", "policy/v1/PodDisruptionBudget", "extensions/v1beta1/Ingress"},
			[]string{"extensions/v1beta1/Deployment", "apps/v1beta2/StatefulSet"}},
	}
	for _, tt := range tests {
		served := servedAPIVersions(tt.kube)
		for _, s := range tt.has {
			if !slices.Contains(served, s) {
				t.Errorf("1.%d lacks %s", tt.kube, s)
			}
		}
		for _, s := range tt.lacks {
			if slices.Contains(served, s) {
				t.Errorf("1.%d serves %s", tt.kube, s)
			}
		}
	}
}

// Only APIs Kubernetes does not define itself are probed for: the target
// version decides about its own.
func TestProbedAPIs(t *testing.T) {
	g := &chartGates{Probes: map[string]bool{
		"monitoring.coreos.com/v1": true, "keda.sh/v1alpha1/ScaledObject": true,
		"policy/v1beta1/PodSecurityPolicy": true, "policy/v1": true, "v1": true, "networking.k8s.io/v1beta1": true,
	}}
	got := probedAPIs(g, servedAPIVersions(36))
	want := []string{"keda.sh/v1alpha1/ScaledObject", "monitoring.coreos.com/v1"}
	if !slices.Equal(got, want) {
		t.Errorf("probed = %q, want %q", got, want)
	}
}
