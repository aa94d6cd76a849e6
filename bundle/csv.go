package bundle

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/chartpilot/chartpilot/scaffold"
)

// CSV annotations chartpilot writes.
const (
	AnnotationCapabilities   = "capabilities"
	AnnotationALMExamples    = "alm-examples"
	AnnotationContainerImage = "containerImage"
	AnnotationCreatedAt      = "createdAt"
	AnnotationSkipRange      = "olm.skipRange"
	AnnotationBuilder        = "operators.operatorframework.io/builder"
	AnnotationProjectLayout  = "operators.operatorframework.io/project_layout"
	// ProjectLayout is operator-sdk's layout name for Helm projects.
	ProjectLayout = "helm.sdk.operatorframework.io/v1"
	// targetNamespacesFieldPath is where OLM puts the OperatorGroup's
	// namespaces on the operator's pods.
	targetNamespacesFieldPath = "metadata.annotations['olm.targetNamespaces']"
	// DefaultMinKubeVersion is the minKubeVersion of a CSV when neither the
	// base CSV nor a chart's kubeVersion says: the first Kubernetes release
	// serving every API the chartpilot runtime uses at GA (CRD v1,
	// coordination v1 leases, autoscaling/v2, policy/v1).
	DefaultMinKubeVersion = "1.25.0"
)

// fromUnstructured converts o into a typed object, naming o on failure.
func fromUnstructured(o *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		return fmt.Errorf("%s: %w", describe(o), err)
	}
	return nil
}

// installStrategy turns the manager Deployments and the RBAC bound to their
// service accounts into the CSV's deployment install strategy. It returns
// the RBAC objects it consumed, which the bundle does not carry apart.
func installStrategy(m *projectManifests, images map[string]string) (v1alpha1.StrategyDetailsDeployment, map[string]bool, error) {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

// ownedCRDs describes each served version of each CRD, keeping what the
// base says (display names, descriptions, descriptors) over what is derived.
func ownedCRDs(crds []*apiextensionsv1.CustomResourceDefinition, base []v1alpha1.CRDDescription, resources map[string][]v1alpha1.APIResourceReference) []v1alpha1.CRDDescription {
	var out []v1alpha1.CRDDescription
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			d := v1alpha1.CRDDescription{Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind, DisplayName: displayName(crd.Spec.Names.Kind)}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				s := v.Schema.OpenAPIV3Schema
				d.Description = s.Description
				if spec, ok := s.Properties["spec"]; ok {
					d.SpecDescriptors = specDescriptors(spec)
				}
				if status, ok := s.Properties["status"]; ok {
					d.StatusDescriptors = statusDescriptors(status)
				}
			}
			d.Resources = resources[crd.Spec.Group+"/"+crd.Spec.Names.Kind]
			for _, b := range base {
				if b.Name == d.Name && (b.Version == d.Version || b.Version == "") {
					d = mergeCRDDescription(b, d)
				}
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.CRDDescription) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Version, b.Version))
	})
	return out
}

// mergeCRDDescription keeps the author's fields of base over derived ones.
func mergeCRDDescription(base, derived v1alpha1.CRDDescription) v1alpha1.CRDDescription {
	out := derived
	out.DisplayName = cmp.Or(base.DisplayName, derived.DisplayName)
	out.Description = cmp.Or(base.Description, derived.Description)
	out.ActionDescriptor = base.ActionDescriptor
	out.SpecDescriptors = mergeDescriptors(base.SpecDescriptors, derived.SpecDescriptors)
	out.StatusDescriptors = mergeStatusDescriptors(base.StatusDescriptors, derived.StatusDescriptors)
	seen := map[string]bool{}
	out.Resources = nil
	for _, r := range append(slices.Clone(base.Resources), derived.Resources...) {
		if k := r.Kind + "/" + r.Version + "/" + r.Name; !seen[k] {
			seen[k] = true
			out.Resources = append(out.Resources, r)
		}
	}
	return out
}

func mergeDescriptors(base, derived []v1alpha1.SpecDescriptor) []v1alpha1.SpecDescriptor {
	out := slices.Clone(base)
	for _, d := range derived {
		if !slices.ContainsFunc(base, func(b v1alpha1.SpecDescriptor) bool { return b.Path == d.Path }) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.SpecDescriptor) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func mergeStatusDescriptors(base, derived []v1alpha1.StatusDescriptor) []v1alpha1.StatusDescriptor {
	out := slices.Clone(base)
	for _, d := range derived {
		if !slices.ContainsFunc(base, func(b v1alpha1.StatusDescriptor) bool { return b.Path == d.Path }) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.StatusDescriptor) int { return strings.Compare(a.Path, b.Path) })
	return out
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

// almExamples is the alm-examples annotation: the samples as a JSON array.
func almExamples(samples []*unstructured.Unstructured) (string, error) {
	list := make([]map[string]any, 0, len(samples))
	for _, s := range samples {
		o := s.DeepCopy()
		o.SetNamespace("")
		list = append(list, o.Object)
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", fmt.Errorf("alm-examples: %w", err)
	}
	return string(data), nil
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

// csvToYAML marshals the CSV without the fields a typed object always
// carries but a manifest should not (status, null timestamps).
func csvToYAML(csv *v1alpha1.ClusterServiceVersion) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, err
	}
	delete(obj, "status")
	return marshalObject(obj)
}

// marshalObject is the YAML of a manifest, with null creationTimestamps
// (left by typed round trips) removed; keys are sorted, so output is stable.
func marshalObject(obj map[string]any) ([]byte, error) {
	dropNullTimestamps(obj)
	return yamlMarshal(obj)
}

func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ts, ok := v["creationTimestamp"]; ok && ts == nil {
			delete(v, "creationTimestamp")
		}
		for _, x := range v {
			dropNullTimestamps(x)
		}
	case []any:
		for _, x := range v {
			dropNullTimestamps(x)
		}
	}
}

// baseCSV returns a new base CSV for a project without one: the fields an
// author edits, with sane defaults. Owned APIs are filled from the CRDs
// when the bundle is generated.
func baseCSV(projectName, domain string) *v1alpha1.ClusterServiceVersion {
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.ClusterServiceVersionAPIVersion, Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        projectName + ".v0.0.0",
			Namespace:   "placeholder",
			Annotations: map[string]string{AnnotationALMExamples: "[]", AnnotationCapabilities: LevelBasicInstall.String()},
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:  displayName(projectName),
			Description:  projectName + " runs Helm charts as a Kubernetes operator (built with chartpilot).",
			Keywords:     []string{projectName},
			Maturity:     "alpha",
			Provider:     v1alpha1.AppLink{Name: domain},
			InstallModes: defaultInstallModes(),
		},
	}
	return csv
}
