package rbac

import (
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// verbOrder is the order verbs are listed in.
var verbOrder = map[string]int{"get": 0, "list": 1, "watch": 2, "create": 3, "update": 4, "patch": 5, "delete": 6, "deletecollection": 7}

func sortVerbs(verbs []string) {
	sort.Slice(verbs, func(i, j int) bool {
		oi, iok := verbOrder[verbs[i]]
		oj, jok := verbOrder[verbs[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		default:
			return verbs[i] < verbs[j]
		}
	})
}

// ruleKey identifies one rule: one resource (or the non-resource URLs) of
// one group, at one scope, maybe restricted to names.
type ruleKey struct {
	namespaced    bool
	group         string
	resource      string
	resourceNames string
	nonResource   string
}

type ruleEntry struct {
	verbs   map[string]bool
	reasons []string
}

// ruleSet merges rules by resource, uniting verbs and reasons.
type ruleSet struct {
	entries map[ruleKey]*ruleEntry
}

func newRuleSet() *ruleSet { return &ruleSet{entries: map[ruleKey]*ruleEntry{}} }

func (s *ruleSet) entry(k ruleKey) *ruleEntry {
	e, ok := s.entries[k]
	if !ok {
		e = &ruleEntry{verbs: map[string]bool{}}
		s.entries[k] = e
	}
	return e
}

func (e *ruleEntry) merge(verbs []string, reason string) {
	for _, v := range verbs {
		e.verbs[v] = true
	}
	for _, r := range e.reasons {
		if r == reason {
			return
		}
	}
	e.reasons = append(e.reasons, reason)
}

// add grants verbs on group/resource (restricted to names when given).
func (s *ruleSet) add(namespaced bool, group, resource string, names, verbs []string, reason string) {
	s.entry(ruleKey{namespaced: namespaced, group: group, resource: resource, resourceNames: strings.Join(names, ",")}).merge(verbs, reason)
}

// addNonResource grants verbs on non-resource URLs (cluster-wide only).
func (s *ruleSet) addNonResource(urls, verbs []string, reason string) {
	u := append([]string(nil), urls...)
	sort.Strings(u)
	s.entry(ruleKey{nonResource: strings.Join(u, ",")}).merge(verbs, reason)
}

// list returns the rules ordered by scope (cluster first), group, resource.
func (s *ruleSet) list() []Rule {
	keys := make([]ruleKey, 0, len(s.entries))
	for k := range s.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.namespaced != b.namespaced {
			return !a.namespaced
		}
		if a.nonResource != b.nonResource {
			return a.nonResource < b.nonResource
		}
		if a.group != b.group {
			return a.group < b.group
		}
		if a.resource != b.resource {
			return a.resource < b.resource
		}
		return a.resourceNames < b.resourceNames
	})
	out := make([]Rule, 0, len(keys))
	for _, k := range keys {
		e := s.entries[k]
		verbs := sortedKeys(e.verbs)
		sortVerbs(verbs)
		r := Rule{Namespaced: k.namespaced, Reasons: e.reasons}
		r.Verbs = verbs
		if k.nonResource != "" {
			r.NonResourceURLs = strings.Split(k.nonResource, ",")
		} else {
			r.APIGroups = []string{k.group}
			r.Resources = []string{k.resource}
			if k.resourceNames != "" {
				r.ResourceNames = strings.Split(k.resourceNames, ",")
			}
		}
		out = append(out, r)
	}
	return out
}

// PolicyRules returns the rules as plain rbacv1 rules.
func PolicyRules(rules []Rule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, r.PolicyRule)
	}
	return out
}
