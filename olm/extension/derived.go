package extension

import (
	"context"
	"fmt"

	"github.com/chartpilot/chartpilot/bundle/installer"
	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

// DerivedRules is the InstallerRulesFunc of least privilege: the rules
// operator-controller needs to install the request's bundle (and, on an
// upgrade, to remove what the installed one has and the new one drops),
// derived from the bundles alone by bundle/installer.
func DerivedRules(ctx context.Context, req InstallerRequest) (InstallerRules, error) {
	var bundles []*olmv1.Bundle
	for _, b := range []*Bundle{req.Previous, &req.Bundle} {
		if b == nil {
			continue
		}
		ob, err := olmv1.Open(ctx, b.Dir)
		if err != nil {
			return InstallerRules{}, err
		}
		bundles = append(bundles, ob)
	}
	rbac, err := installer.Rules(installer.Options{Extension: req.Extension, Namespace: req.Namespace}, bundles...)
	if err != nil {
		return InstallerRules{}, err
	}
	rules := InstallerRules{Cluster: rbac.ClusterRole.Rules}
	for _, role := range rbac.Roles {
		if role.Namespace != req.Namespace {
			// Only a SingleNamespace install, which install does not offer,
			// has a Role elsewhere.
			return InstallerRules{}, fmt.Errorf("the installer needs rules in namespace %s besides %s", role.Namespace, req.Namespace)
		}
		rules.Namespaced = append(rules.Namespaced, role.Rules...)
	}
	return rules, nil
}
