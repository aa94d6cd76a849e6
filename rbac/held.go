package rbac

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/chart"
)

// This file reads the Roles, ClusterRoles and bindings a chart renders:
// Kubernetes lets a subject create a role only with permissions it holds,
// and bind only roles whose permissions it holds (or may bind). A chart's
// object may hold what Kubernetes would refuse (a string where a list
// belongs, a value-made name that is not a string): such a field is named
// in a warning, never a reason to stop.

// addHeldPermissions adds the rules of the Roles and ClusterRoles the chart
// renders and `bind` on the roles its bindings refer to that it does not
// create; it returns the problems of objects it could not read.
//
// explored are the renders with values chartpilot made up: what is wrong
// there may be those values, which the warning says.
func addHeldPermissions(releaseNS string, rules *ruleSet, renders []*chart.Rendered, explored map[*chart.Rendered]bool) []Problem {
	var problems []Problem
	seen := map[string]bool{}
	var r *chart.Rendered
	warn := func(m chart.Manifest, msg string) {
		p := Problem{Template: m.Source, GVK: m.GroupVersionKind(), Message: fmt.Sprintf("%s %s: %s", m.Object.GetKind(), m.Object.GetName(), msg)}
		if seen[p.String()] {
			return
		}
		seen[p.String()] = true
		if explored[r] {
			p.Message += " (in a render with values chartpilot made up to explore the chart's gates, which may be what is wrong)"
		}
		problems = append(problems, p)
	}
	for _, r = range renders {
		var objects []chart.Manifest
		for _, m := range r.Objects {
			if items := listItems(m); items != nil {
				objects = append(objects, items...)
			} else {
				objects = append(objects, m)
			}
		}
		roles := map[string]bool{}
		for _, m := range objects {
			kind := m.Object.GetKind()
			if m.Object.GroupVersionKind().Group != rbacv1.GroupName || (kind != "Role" && kind != "ClusterRole") {
				continue
			}
			roles[kind+"/"+m.Object.GetName()] = true
			prs, bad := readRules(m.Object.Object["rules"])
			for _, b := range bad {
				if explored[r] && madeUp(b.value) {
					continue // a value chartpilot made up, not the chart's
				}
				warn(m, b.msg+": Kubernetes refuses the object, and the operator is not granted what that rule would grant")
			}
			// A Role in a namespace of its own (kube-system, say) is out of
			// reach of the operator's Role in the watched namespaces.
			namespaced := kind == "Role" && inRelease(m, releaseNS)
			name := m.Object.GetName()
			if strings.Contains(name, ExploredValue) {
				name = "(named from values)"
			}
			why := fmt.Sprintf("held so that Helm may create %s %s (%s): Kubernetes refuses to grant permissions the creator lacks", kind, name, m.Source)
			for _, pr := range prs {
				if len(pr.NonResourceURLs) > 0 {
					rules.addNonResource(pr.NonResourceURLs, pr.Verbs, why)
					continue
				}
				for _, g := range pr.APIGroups {
					for _, res := range pr.Resources {
						// resourceNames are dropped: chart roles name
						// objects after the release, which varies by CR.
						rules.add(namespaced, g, res, nil, pr.Verbs, why)
					}
				}
			}
		}
		for _, m := range objects {
			kind := m.Object.GetKind()
			if m.Object.GroupVersionKind().Group != rbacv1.GroupName || (kind != "RoleBinding" && kind != "ClusterRoleBinding") {
				continue
			}
			ref, ok := m.Object.Object["roleRef"].(map[string]any)
			if !ok {
				warn(m, "roleRef is not an object: Kubernetes refuses the binding")
				continue
			}
			refKind, kindOK := ref["kind"].(string)
			refName, nameOK := ref["name"].(string)
			if !kindOK || !nameOK {
				field, v := "name", ref["name"]
				if !kindOK {
					field, v = "kind", ref["kind"]
				}
				warn(m, fmt.Sprintf("roleRef.%s is %s, not a string: Kubernetes refuses the binding (a value the chart writes there is of the wrong type), and the operator is not granted `bind` for it", field, describeValue(v)))
				continue
			}
			if roles[refKind+"/"+refName] {
				continue
			}
			resource := "clusterroles"
			if refKind == "Role" {
				resource = "roles"
			}
			if strings.Contains(refName, ExploredValue) {
				warn(m, fmt.Sprintf("binds %s %q, whose name comes from values chartpilot explored: a CR that names a %s the chart does not create needs `bind` on it; add {apiGroups: [%q], resources: [%q], resourceNames: [NAME], verbs: [bind]} to role.yaml for each name CRs may give",
					refKind, refName, refKind, rbacv1.GroupName, resource))
				continue
			}
			rules.add(kind == "RoleBinding" && inRelease(m, releaseNS), rbacv1.GroupName, resource, []string{refName}, []string{"bind"},
				fmt.Sprintf("%s %s (%s) binds %s %s, which the chart does not create", kind, m.Object.GetName(), m.Source, refKind, refName))
		}
	}
	return problems
}

// badField is a field of a role Kubernetes would refuse: what is wrong, and
// the value at fault.
type badField struct {
	msg   string
	value any
}

// readRules reads a role's rules leniently: a rule whose field Kubernetes
// would refuse is dropped and named in bad.
func readRules(v any) (rules []rbacv1.PolicyRule, bad []badField) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, []badField{{fmt.Sprintf("rules is %s, not a list", describeValue(v)), v}}
	}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			bad = append(bad, badField{fmt.Sprintf("rules[%d] is %s, not an object", i, describeValue(item)), item})
			continue
		}
		var pr rbacv1.PolicyRule
		var problems []badField
		for _, f := range []struct {
			name string
			dst  *[]string
		}{{"apiGroups", &pr.APIGroups}, {"resources", &pr.Resources}, {"resourceNames", &pr.ResourceNames}, {"nonResourceURLs", &pr.NonResourceURLs}, {"verbs", &pr.Verbs}} {
			strs, why, at := stringList(m[f.name])
			if why != "" {
				problems = append(problems, badField{fmt.Sprintf("rules[%d].%s is %s", i, f.name, why), at})
			}
			*f.dst = strs
		}
		if len(problems) > 0 {
			bad = append(bad, problems...)
			continue
		}
		rules = append(rules, pr)
	}
	return rules, bad
}

// stringList reads a list of strings; what is wrong is described otherwise,
// with the value at fault.
func stringList(v any) ([]string, string, any) {
	if v == nil {
		return nil, "", nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, describeValue(v) + ", not a list of strings", v
	}
	out := make([]string, 0, len(list))
	for j, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Sprintf("a list whose item %d is %s, not a string", j, describeValue(e)), e
		}
		out = append(out, s)
	}
	return out, "", nil
}

// madeUp says whether a value is one the exploration makes up: an empty
// map or list (an item of a list turned on), or its placeholder.
func madeUp(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return strings.Contains(t, ExploredValue)
	}
	return false
}

// describeValue names a YAML value and its type for a message.
func describeValue(v any) string {
	switch t := v.(type) {
	case nil:
		return "missing"
	case string:
		return fmt.Sprintf("the string %q", t)
	case bool:
		return fmt.Sprintf("%v (a boolean)", t)
	case int64, float64:
		return fmt.Sprintf("%v (a number)", t)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}

// adminWarnings name the rules that make the operator cluster-admin in
// effect: all of every API, or a way to any permission (escalate or bind
// on any role, impersonate any user), cluster-wide. The operator must hold
// them because the chart's roles grant them (or its bindings bind them).
func adminWarnings(res *Result) []Problem {
	var out []Problem
	for _, r := range res.Rules {
		if r.Namespaced && res.Role != nil {
			continue // in a Role: one namespace only
		}
		var what string
		switch {
		case has(r.APIGroups, "*") && has(r.Resources, "*"):
			what = "every verb it lists on every resource of every API group"
		case len(r.ResourceNames) == 0 && (has(r.Resources, "clusterroles") || has(r.Resources, "roles") || has(r.Resources, "*")) && (has(r.Verbs, "escalate") || has(r.Verbs, "bind") || has(r.Verbs, "*")) && (has(r.APIGroups, rbacv1.GroupName) || has(r.APIGroups, "*")):
			what = "escalate or bind on any role, which grants any permission"
		case has(r.Verbs, "impersonate") || (has(r.Verbs, "*") && (has(r.Resources, "users") || has(r.Resources, "groups") || has(r.Resources, "serviceaccounts"))):
			what = "impersonation, which acts as any user"
		default:
			continue
		}
		out = append(out, Problem{Message: fmt.Sprintf("the operator is cluster-admin in effect: it must hold {apiGroups: %v, resources: %v, verbs: %v} (%s) cluster-wide, because: %s; review whether the chart needs that role, or turn it off with the chart's values",
			r.APIGroups, r.Resources, r.Verbs, what, strings.Join(r.Reasons, "; "))})
	}
	return out
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// inRelease says whether m is created in the release's namespace, not in one
// the chart names for it.
func inRelease(m chart.Manifest, releaseNS string) bool {
	ns := m.Object.GetNamespace()
	return ns == "" || ns == releaseNS
}
