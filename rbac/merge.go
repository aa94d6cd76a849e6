package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Merge unites the results of several charts served by one operator (a
// project with several APIs) into one ClusterRole (and Role): rules on the
// same resource get the union of their verbs and reasons. Every result must
// have been derived with the same Name and WatchNamespace; the first one's
// chart heads role.yaml.
func Merge(results ...*Result) *Result {
	if len(results) == 1 {
		return results[0]
	}
	first := results[0]
	out := &Result{opts: first.opts}
	set := newRuleSet()
	for _, r := range results {
		out.Kinds = append(out.Kinds, r.Kinds...)
		out.Errors = append(out.Errors, r.Errors...)
		out.Warnings = append(out.Warnings, r.Warnings...)
		for _, rule := range r.Rules {
			for _, reason := range rule.Reasons {
				if len(rule.NonResourceURLs) > 0 {
					set.addNonResource(rule.NonResourceURLs, rule.Verbs, reason)
				} else {
					set.add(rule.Namespaced, rule.APIGroups[0], rule.Resources[0], rule.ResourceNames, rule.Verbs, reason)
				}
			}
		}
	}
	out.Rules = set.list()
	out.ClusterRole = &rbacv1.ClusterRole{TypeMeta: first.ClusterRole.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: first.ClusterRole.Name}, Rules: []rbacv1.PolicyRule{}}
	if first.Role != nil {
		out.Role = &rbacv1.Role{TypeMeta: first.Role.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: first.Role.Name, Namespace: first.Role.Namespace}, Rules: []rbacv1.PolicyRule{}}
	}
	for _, r := range out.Rules {
		if r.Namespaced && out.Role != nil {
			out.Role.Rules = append(out.Role.Rules, r.PolicyRule)
		} else {
			out.ClusterRole.Rules = append(out.ClusterRole.Rules, r.PolicyRule)
		}
	}
	return out
}
