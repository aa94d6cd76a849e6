package installer

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// prune drops each rule the others (and outer, the cluster-wide rules that
// apply in a namespace too) cover, first to last: an operator rule such as
// configmaps/* makes the installer's own configmaps rules redundant.
func prune(rules, outer []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := slices.Clone(rules)
	for i := 0; i < len(out); {
		others := slices.Concat(out[:i], out[i+1:], outer)
		if covers(others, out[i]) {
			out = slices.Delete(out, i, i+1)
			continue
		}
		i++
	}
	return out
}

// covers tells whether owner allows everything r allows, as the API server
// compares rules when it checks for escalation: r broken into single
// (group, resource, verb, name) or (URL, verb) permissions, each allowed by
// one rule of owner.
func covers(owner []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, v := range r.Verbs {
		for _, url := range r.NonResourceURLs {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return has(o.Verbs, v) && urlMatches(o.NonResourceURLs, url) }) {
				return false
			}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool {
						return has(o.Verbs, v) && has(o.APIGroups, g) && resourceMatches(o.Resources, res) &&
							(len(o.ResourceNames) == 0 || n != "" && slices.Contains(o.ResourceNames, n))
					}) {
						return false
					}
				}
			}
		}
	}
	return true
}

// has: list holds s or the wildcard.
func has(list []string, s string) bool {
	return slices.Contains(list, s) || slices.Contains(list, rbacv1.VerbAll)
}

// resourceMatches: exact, "*", "*/sub" for any resource's sub, "res/*".
func resourceMatches(list []string, res string) bool {
	if has(list, res) {
		return true
	}
	base, sub, ok := strings.Cut(res, "/")
	return ok && (slices.Contains(list, "*/"+sub) || slices.Contains(list, base+"/*"))
}

func urlMatches(list []string, url string) bool {
	for _, u := range list {
		if u == url || u == "*" || strings.HasSuffix(u, "*") && strings.HasPrefix(url, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}
