package bundle

import (
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/rbac"
)

// extrasHeading opens the section of the CSV's description that names the
// backup API's extra permissions (rbac.Extras) the operator holds.
const extrasHeading = "## Permissions beyond managing the charts"

// strategyExtras are the backup API's extra permissions that the install
// strategy grants, namespaced or cluster-wide.
func strategyExtras(s v1alpha1.StrategyDetailsDeployment) []rbac.Extra {
	var rules []rbacv1.PolicyRule
	for _, p := range slices.Concat(s.Permissions, s.ClusterPermissions) {
		rules = append(rules, p.Rules...)
	}
	return rbac.FindExtras(rules)
}

// describeExtras returns description with its section on extras
// replaced by one naming each of extras and why (none without extras).
func describeExtras(description string, extras []rbac.Extra) string {
	if i := strings.Index(description, extrasHeading); i >= 0 {
		description = strings.TrimRight(description[:i], "\n")
	}
	if len(extras) == 0 {
		return description
	}
	var b strings.Builder
	b.WriteString(description)
	b.WriteString("\n\n" + extrasHeading + "\n\nThe backup API grants the operator these permissions besides what managing its charts' releases takes, each because a chart needs it:\n\n")
	for _, e := range extras {
		b.WriteString("- " + e.String() + "\n")
	}
	return b.String()
}
