package bundle

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/internal/kustimage"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// installStrategy sets the CSV's install strategy from the project's
// manager Deployments and their RBAC, the permissions beyond managing the
// charts in its description, its install modes, and the images it runs:
// the operator's pinned to digests when asked, the charts' as they name
// them. It returns the project objects the strategy took in.
func (g *generation) installStrategy(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, m *projectManifests) (map[string]bool, error) {
	images, err := withAliases(filepath.Join(g.opts.Dir, "config", "manifests"), g.opts.Images)
	if err != nil {
		return nil, err
	}
	strategy, consumed, err := deploymentStrategy(m, images)
	if err != nil {
		return nil, err
	}
	warnings, err := checkAllNamespaces(m, strategy)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		g.warn("%s", w)
	}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}
	csv.Spec.Description = describeExtras(csv.Spec.Description, strategyExtras(strategy))
	if len(csv.Spec.InstallModes) == 0 {
		csv.Spec.InstallModes = defaultInstallModes()
	}
	g.checkInstallModes(csv.Spec.InstallModes)
	csv.Spec.RelatedImages = relatedImages(strategy, csv.Spec.RelatedImages)
	if g.opts.UseImageDigests {
		if err := pinDigests(ctx, csv); err != nil {
			return nil, err
		}
	}
	// The operand's images are listed as the charts name them: the charts,
	// not the CSV, decide what runs, so they are not pinned.
	csv.Spec.RelatedImages = addRelatedImages(csv.Spec.RelatedImages, g.operandImages)
	g.res.Images = g.operandImages
	csv.Annotations[AnnotationContainerImage] = containerImage(csv.Spec.InstallStrategy.StrategySpec)
	return consumed, nil
}

// deploymentStrategy turns the manager Deployments and the RBAC bound to their
// service accounts into the CSV's deployment install strategy. It returns
// the RBAC objects it consumed, which the bundle does not carry apart.
func deploymentStrategy(m *projectManifests, images map[string]string) (v1alpha1.StrategyDetailsDeployment, map[string]bool, error) {
	var spec v1alpha1.StrategyDetailsDeployment
	accounts := map[string]bool{}
	for _, o := range m.deployments {
		var d appsv1.Deployment
		if err := fromUnstructured(o, &d); err != nil {
			return spec, nil, err
		}
		podSpec := &d.Spec.Template.Spec
		for i := range podSpec.Containers {
			rewireContainer(&podSpec.Containers[i], images)
		}
		for i := range podSpec.InitContainers {
			rewireContainer(&podSpec.InitContainers[i], images)
		}
		sa := cmp.Or(podSpec.ServiceAccountName, "default")
		podSpec.ServiceAccountName = sa
		accounts[sa] = true
		spec.DeploymentSpecs = append(spec.DeploymentSpecs, v1alpha1.StrategyDeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec})
	}

	consumed := map[string]bool{}
	// The namespaced rules granted in every namespace for a deployment
	// without OLM: OLM grants the permissions in the install mode's
	// namespaces itself (see checkAllNamespaces).
	for _, o := range slices.Concat(m.clusterRoles, m.clusterRoleBindings) {
		if o.GetAnnotations()[scaffold.AllNamespacesAnnotation] != "" {
			consumed[objectID(o)] = true
		}
	}
	rulesOf := func(kind, name string) ([]rbacv1.PolicyRule, bool) {
		list := m.clusterRoles
		if kind == kindRole {
			list = m.roles
		}
		for _, o := range list {
			if o.GetName() != name {
				continue
			}
			var r rbacv1.ClusterRole // a Role's fields are a subset
			if err := fromUnstructured(o, &r); err != nil {
				return nil, false
			}
			consumed[objectID(o)] = true
			return r.Rules, true
		}
		return nil, false
	}
	perms, clusterPerms := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	bind := func(bindings []*unstructured.Unstructured, cluster bool) error {
		for _, o := range bindings {
			if consumed[objectID(o)] {
				continue
			}
			var b rbacv1.RoleBinding // a ClusterRoleBinding's fields are the same
			if err := fromUnstructured(o, &b); err != nil {
				return err
			}
			var bound []string
			others := false
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && accounts[s.Name] {
					bound = append(bound, s.Name)
				} else {
					others = true
				}
			}
			if len(bound) == 0 {
				continue
			}
			if others {
				return fmt.Errorf("%s binds the operator's service account and other subjects; give the operator a binding of its own", describe(o))
			}
			rules, ok := rulesOf(b.RoleRef.Kind, b.RoleRef.Name)
			if !ok {
				return fmt.Errorf("%s refers to %s %s, which the manifests do not hold", describe(o), b.RoleRef.Kind, b.RoleRef.Name)
			}
			consumed[objectID(o)] = true
			for _, sa := range bound {
				if cluster {
					clusterPerms[sa] = append(clusterPerms[sa], rules...)
				} else {
					perms[sa] = append(perms[sa], rules...)
				}
			}
		}
		return nil
	}
	if err := bind(m.clusterRoleBindings, true); err != nil {
		return spec, nil, err
	}
	if err := bind(m.roleBindings, false); err != nil {
		return spec, nil, err
	}
	spec.Permissions = permissionList(perms)
	spec.ClusterPermissions = permissionList(clusterPerms)
	for _, o := range m.serviceAccounts {
		if accounts[o.GetName()] {
			consumed[objectID(o)] = true
		}
	}
	return spec, consumed, nil
}

// permissionList lists the rules by service account; one without rules
// (an empty ClusterRole: a chart whose objects are all namespaced) is
// left out.
func permissionList(rules map[string][]rbacv1.PolicyRule) []v1alpha1.StrategyDeploymentPermissions {
	var out []v1alpha1.StrategyDeploymentPermissions
	for _, sa := range sortedKeys(rules) {
		if len(rules[sa]) == 0 {
			continue
		}
		out = append(out, v1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules[sa]})
	}
	return out
}

// checkAllNamespaces compares the ClusterRoles marked
// scaffold.AllNamespacesAnnotation, which the bundle leaves out, with the
// permissions (namespaced rules) of the service accounts their bindings
// bind: what they grant beyond is said, since OLM will not grant it.
func checkAllNamespaces(m *projectManifests, spec v1alpha1.StrategyDetailsDeployment) ([]string, error) {
	granted := map[string]map[string]bool{}
	for _, p := range spec.Permissions {
		granted[p.ServiceAccountName] = ruleTriples(p.Rules)
	}
	var warnings []string
	for _, o := range m.clusterRoleBindings {
		if o.GetAnnotations()[scaffold.AllNamespacesAnnotation] == "" {
			continue
		}
		var b rbacv1.ClusterRoleBinding
		if err := fromUnstructured(o, &b); err != nil {
			return nil, err
		}
		idx := slices.IndexFunc(m.clusterRoles, func(r *unstructured.Unstructured) bool { return r.GetName() == b.RoleRef.Name })
		if idx < 0 {
			continue
		}
		var role rbacv1.ClusterRole
		if err := fromUnstructured(m.clusterRoles[idx], &role); err != nil {
			return nil, err
		}
		for _, s := range b.Subjects {
			var extra []string
			for _, t := range sortedKeys(ruleTriples(role.Rules)) {
				if !granted[s.Name][t] {
					extra = append(extra, t)
				}
			}
			if len(extra) > 0 {
				warnings = append(warnings, fmt.Sprintf("%s grants %s beyond the namespaced permissions of service account %s (a Role bound to it): the bundle leaves it out (%s), so OLM will not grant them; put them in the Role (config/rbac/role.yaml)",
					describe(m.clusterRoles[idx]), strings.Join(extra, ", "), s.Name, scaffold.AllNamespacesAnnotation))
			}
		}
	}
	return warnings, nil
}

// ruleTriples expands rules into "group/resource[names]:verb" strings.
func ruleTriples(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					names := ""
					if len(r.ResourceNames) > 0 {
						names = "[" + strings.Join(r.ResourceNames, ",") + "]"
					}
					out[g+"/"+res+names+":"+v] = true
				}
			}
		}
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out[u+":"+v] = true
			}
		}
	}
	return out
}

// rewireContainer applies image overrides (kustomize's `images` semantics:
// the name matches the image without tag or digest) and points
// WATCH_NAMESPACE at the namespaces of the OperatorGroup OLM installs into.
func rewireContainer(c *corev1.Container, images map[string]string) {
	if ref, ok := images[imageName(c.Image)]; ok {
		c.Image = ref
	}
	for i := range c.Env {
		if c.Env[i].Name == "WATCH_NAMESPACE" {
			c.Env[i].Value = ""
			c.Env[i].ValueFrom = &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: targetNamespacesFieldPath}}
		}
	}
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// relatedImages lists every image the operator's deployments run or name
// in RELATED_IMAGE_* variables (operator-sdk's convention), plus those the
// base lists, by name.
func relatedImages(spec v1alpha1.StrategyDetailsDeployment, base []v1alpha1.RelatedImage) []v1alpha1.RelatedImage {
	byName := map[string]string{}
	seen := map[string]bool{}
	add := func(name, image string) {
		if image == "" || seen[image] {
			return
		}
		seen[image] = true
		for n, i := 2, name; ; n++ {
			if _, taken := byName[i]; !taken {
				byName[i] = image
				return
			}
			i = fmt.Sprintf("%s-%d", name, n)
		}
	}
	for _, r := range base {
		add(r.Name, r.Image)
	}
	for _, d := range spec.DeploymentSpecs {
		ps := d.Spec.Template.Spec
		for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
			add(c.Name, c.Image)
			for _, e := range c.Env {
				if n, ok := strings.CutPrefix(e.Name, "RELATED_IMAGE_"); ok {
					add(strings.ToLower(strings.ReplaceAll(n, "_", "-")), e.Value)
				}
			}
		}
	}
	var out []v1alpha1.RelatedImage
	for _, n := range sortedKeys(byName) {
		out = append(out, v1alpha1.RelatedImage{Name: n, Image: byName[n]})
	}
	return out
}

// addRelatedImages adds the images not listed yet, names made unique,
// sorted by name.
func addRelatedImages(list []v1alpha1.RelatedImage, add []FoundImage) []v1alpha1.RelatedImage {
	out := slices.Clone(list)
	for _, a := range add {
		if a.Image == "" || slices.ContainsFunc(out, func(r v1alpha1.RelatedImage) bool { return r.Image == a.Image }) {
			continue
		}
		name := a.Name
		for n := 2; slices.ContainsFunc(out, func(r v1alpha1.RelatedImage) bool { return r.Name == name }); n++ {
			name = fmt.Sprintf("%s-%d", a.Name, n)
		}
		out = append(out, v1alpha1.RelatedImage{Name: name, Image: a.Image})
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.RelatedImage) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// containerImage is the operator's image: the container named "manager" of
// the first deployment, else its first container.
func containerImage(spec v1alpha1.StrategyDetailsDeployment) string {
	if len(spec.DeploymentSpecs) == 0 {
		return ""
	}
	cs := spec.DeploymentSpecs[0].Spec.Template.Spec.Containers
	for _, c := range cs {
		if c.Name == "manager" {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// withAliases adds to the images given by name every name the `images:`
// entries of the manifests' kustomizations rename them to: the image given
// wins over one set with `kustomize edit set image`.
func withAliases(manifestsDir string, images map[string]string) (map[string]string, error) {
	out := maps.Clone(images)
	for name, ref := range images {
		aliases, err := kustimage.Aliases(manifestsDir, name)
		if err != nil {
			return nil, err
		}
		for _, a := range aliases {
			if _, given := images[a]; !given {
				out[a] = ref
			}
		}
	}
	return out, nil
}

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

// checkInstallModes warns, when the CSV supports an install mode that
// grants the namespaced permissions only in the watched namespaces, about
// the charts' namespaced objects that go to a namespace of their own.
func (g *generation) checkInstallModes(modes []v1alpha1.InstallMode) {
	var narrow []string
	for _, m := range modes {
		if m.Supported && m.Type != v1alpha1.InstallModeTypeAllNamespaces {
			narrow = append(narrow, string(m.Type))
		}
	}
	if len(narrow) == 0 {
		return
	}
	for _, e := range g.elsewhere {
		g.warn("%s: in install modes %s OLM grants the operator's namespaced permissions only in the namespaces it watches, so such a release fails unless that namespace is one of them; keep the object in the release's namespace, or support only AllNamespaces in the base CSV's installModes",
			e, strings.Join(narrow, ", "))
	}
}

// defaultInstallModes are what the chartpilot runtime supports: it watches
// one namespace, a comma-separated list, or all of them (WATCH_NAMESPACE).
func defaultInstallModes() []v1alpha1.InstallMode {
	return []v1alpha1.InstallMode{
		{Type: v1alpha1.InstallModeTypeOwnNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeSingleNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeMultiNamespace, Supported: true},
		{Type: v1alpha1.InstallModeTypeAllNamespaces, Supported: true},
	}
}
