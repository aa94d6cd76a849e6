package doctor

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/chartpilot/chartpilot/olm/extension"
)

// Each problem of olm v1 status becomes a check of the step it concerns,
// with its fix; only operator-controller's retries are warnings.
func TestProblemCheck(t *testing.T) {
	tests := []struct {
		kind     extension.ProblemKind
		check    string
		severity string
	}{
		{extension.ProblemServiceAccountMissing, CheckInstaller, "fail"},
		{extension.ProblemPermissionDenied, CheckInstaller, "fail"},
		{extension.ProblemNamespaceMissing, CheckInstaller, "fail"},
		{extension.ProblemCatalogUnpullable, CheckClusterCatalog, "fail"},
		{extension.ProblemNoCatalog, CheckClusterCatalog, "fail"},
		{extension.ProblemPackageNotFound, CheckClusterExtension, "fail"},
		{extension.ProblemUpgradeUnsafe, CheckClusterExtension, "fail"},
		{extension.ProblemBlocked, CheckClusterExtension, "fail"},
		{extension.ProblemInvalidConfiguration, CheckClusterExtension, "fail"},
		{extension.ProblemRetrying, CheckClusterExtension, "warn"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			c := problemCheck(extension.Problem{Kind: tt.kind, Message: "what happened", Fix: "what to do"}, "clusterextension/demo")
			if c.Check != tt.check || string(c.Severity) != tt.severity || c.Object != "clusterextension/demo" ||
				c.Message != string(tt.kind)+": what happened" || c.Fix != "what to do" {
				t.Errorf("check %+v, want a %s %q check naming %s with the fix", c, tt.severity, tt.check, tt.kind)
			}
		})
	}
}

// The requests a missing rule stands for, as a SubjectAccessReview asks
// them: a create has no name, the ClusterExtension's finalizers are its own.
func TestRuleAttributes(t *testing.T) {
	tests := []struct {
		name    string
		missing extension.MissingRules
		want    string
	}{
		{name: "get by name in a namespace",
			missing: extension.MissingRules{Namespace: "team", Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"tok"}, Verbs: []string{"get"}}}},
			want:    "get secrets tok in team"},
		{name: "create is authorized without a name",
			missing: extension.MissingRules{Rules: []rbacv1.PolicyRule{{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"r"}, Verbs: []string{"create", "patch"}}}},
			want:    "create clusterroles.rbac.authorization.k8s.io; patch clusterroles.rbac.authorization.k8s.io r"},
		{name: "the extension's finalizers",
			missing: extension.MissingRules{Rules: []rbacv1.PolicyRule{{APIGroups: []string{extension.Group}, Resources: []string{"clusterextensions/finalizers"}, Verbs: []string{"update"}}}},
			want:    "update clusterextensions/finalizers.olm.operatorframework.io demo"},
		{name: "escalation with a URL",
			missing: extension.MissingRules{Escalation: true, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
			want:    "get /metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range ruleAttributes(&tt.missing, "demo") {
				got = append(got, a.String())
			}
			if s := strings.Join(got, "; "); s != tt.want {
				t.Errorf("requests %q, want %q", s, tt.want)
			}
		})
	}
}
