package storageversion

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CRDRules are what Migrate needs on the CRDs themselves, each by name:
// read one, and update its status (storedVersions). Listing and updating
// the CRs is granted with the CRs' other rules.
func CRDRules(crds ...string) []rbacv1.PolicyRule {
	names := slices.Sorted(slices.Values(crds))
	names = slices.Compact(names)
	group := []string{apiextensionsv1.GroupName}
	return []rbacv1.PolicyRule{
		{APIGroups: group, Resources: []string{"customresourcedefinitions"}, ResourceNames: names, Verbs: []string{"get"}},
		{APIGroups: group, Resources: []string{"customresourcedefinitions/status"}, ResourceNames: names, Verbs: []string{"update"}},
	}
}

// CRVerbs are what Migrate needs on the CRs, in every namespace.
func CRVerbs() []string { return []string{"list", "update"} }
