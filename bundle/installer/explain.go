package installer

import (
	"fmt"
	"regexp"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Missing is what the installer ServiceAccount lacked, read from the API
// server's Forbidden message, which operator-controller puts into the
// ClusterExtension's Progressing condition as it is.
type Missing struct {
	// Rules are the permissions refused: one for a plain denial, the
	// rules not held for an escalation.
	Rules []rbacv1.PolicyRule
	// Namespace is where the request was refused; "" cluster-wide.
	Namespace string
	// Escalation: the installer asked to create or change a role or
	// binding granting more than it holds.
	Escalation bool
}

var (
	denied     = regexp.MustCompile(`cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)"| at the cluster scope)`)
	deniedName = regexp.MustCompile(`(?:^|: )[a-z0-9.-]+ "([^"]+)" is forbidden: User`)
	escalation = regexp.MustCompile(`is attempting to grant RBAC permissions not currently held:`)
	heldRule   = regexp.MustCompile(`\{(?:APIGroups:\[([^\]]*)\], )?(?:Resources:\[([^\]]*)\], )?(?:ResourceNames:\[([^\]]*)\], )?(?:NonResourceURLs:\[([^\]]*)\], )?Verbs:\[([^\]]*)\]\}`)
	// The OwnerReferencesPermissionEnforcement admission plugin names
	// neither the owner nor the permission.
	finalizersDenied = regexp.MustCompile(`cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on`)
)

// Explain reads what the installer lacked from an error message of
// operator-controller's (or the API server's); ok is false when the message
// is not an RBAC refusal.
func Explain(msg string) (m *Missing, ok bool) {
	switch {
	case escalation.MatchString(msg):
		m = &Missing{Escalation: true}
		for _, g := range heldRule.FindAllStringSubmatch(msg[escalation.FindStringIndex(msg)[1]:], -1) {
			m.Rules = append(m.Rules, rbacv1.PolicyRule{APIGroups: quoted(g[1]), Resources: quoted(g[2]), ResourceNames: quoted(g[3]),
				NonResourceURLs: quoted(g[4]), Verbs: quoted(g[5])})
		}
		return m, true
	case finalizersDenied.MatchString(msg):
		return &Missing{Rules: []rbacv1.PolicyRule{{APIGroups: []string{ExtensionGroup}, Resources: []string{ExtensionFinalizers}, Verbs: []string{"update"}}}}, true
	}
	g := denied.FindStringSubmatch(msg)
	if g == nil {
		return nil, false
	}
	r := rbacv1.PolicyRule{Verbs: []string{g[1]}, Resources: []string{g[2]}, APIGroups: []string{g[3]}}
	if n := deniedName.FindStringSubmatch(msg); n != nil {
		r.ResourceNames = []string{n[1]}
	}
	return &Missing{Rules: []rbacv1.PolicyRule{r}, Namespace: g[4]}, true
}

// quoted splits `"a" "b"` into its strings.
func quoted(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		out = append(out, strings.Trim(f, `"`))
	}
	return out
}

// String says what is missing and what to do, for olm status and doctor.
func (m *Missing) String() string {
	var rules []string
	for _, r := range m.Rules {
		rules = append(rules, describeRule(r))
	}
	where := "cluster-wide"
	if m.Namespace != "" {
		where = "in namespace " + m.Namespace
	}
	const fix = "derive the installer's RBAC from the bundle with `chartpilot bundle rbac --olm-v1` (with --upgrade-from the installed bundle for an upgrade) and apply it"
	if m.Escalation {
		return fmt.Sprintf("the installer ServiceAccount may not grant what it does not hold: %s; %s", strings.Join(rules, "; "), fix)
	}
	return fmt.Sprintf("the installer ServiceAccount may not %s %s; %s", strings.Join(rules, "; "), where, fix)
}

// describeRule: "create apiextensions.k8s.io customresourcedefinitions".
func describeRule(r rbacv1.PolicyRule) string {
	verbs := strings.Join(r.Verbs, ",")
	if len(r.NonResourceURLs) > 0 {
		return verbs + " " + strings.Join(r.NonResourceURLs, ",")
	}
	group := strings.Join(r.APIGroups, ",")
	if group == "" {
		group = "core"
	}
	s := fmt.Sprintf("%s %s %s", verbs, group, strings.Join(r.Resources, ","))
	if len(r.ResourceNames) > 0 {
		s += " named " + strings.Join(r.ResourceNames, ",")
	}
	return s
}
