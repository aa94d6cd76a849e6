package rbac

import (
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/chart"
)

// DefaultKubeVersion is the Kubernetes version APIs are checked against
// unless told otherwise.
const DefaultKubeVersion = "1.36"

// apiChange is a Kubernetes API version that was deprecated and (maybe) removed.
type apiChange struct {
	GVK schema.GroupVersionKind
	// Deprecated and Removed are minor versions of Kubernetes 1.x; Removed 0
	// means still served.
	Deprecated, Removed int
	// Replacement is the apiVersion (and kind, when it differs) to move to;
	// empty when there is none.
	Replacement schema.GroupVersionKind
	// Note says more when there is no plain replacement.
	Note string
	// Resource and ClusterScoped map a kind the built-in table (Kubernetes
	// 1.36) does not hold, for a target version that still serves it.
	Resource      string
	ClusterScoped bool
}

// gvks makes one apiChange per kind of a group version.
func gvks(gv string, deprecated, removed int, replacement string, kinds ...string) []apiChange {
	g, _ := schema.ParseGroupVersion(gv)
	r, _ := schema.ParseGroupVersion(replacement)
	out := make([]apiChange, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, apiChange{GVK: g.WithKind(k), Deprecated: deprecated, Removed: removed, Replacement: r.WithKind(k)})
	}
	return out
}

// apiChanges is the Kubernetes deprecated API migration guide as data.
var apiChanges = concat(
	gvks("extensions/v1beta1", 9, 16, "apps/v1", "Deployment", "DaemonSet", "ReplicaSet"),
	gvks("extensions/v1beta1", 9, 16, "networking.k8s.io/v1", "NetworkPolicy"),
	gvks("extensions/v1beta1", 14, 22, "networking.k8s.io/v1", "Ingress"),
	[]apiChange{{GVK: schema.GroupVersionKind{Group: "extensions", Version: "v1beta1", Kind: "PodSecurityPolicy"}, Deprecated: 11, Removed: 16,
		Note:     "PodSecurityPolicy was removed in 1.25 altogether; use Pod Security Admission (namespace labels pod-security.kubernetes.io/*)",
		Resource: "podsecuritypolicies", ClusterScoped: true}},
	gvks("apps/v1beta1", 9, 16, "apps/v1", "Deployment", "StatefulSet", "ControllerRevision"),
	gvks("apps/v1beta2", 9, 16, "apps/v1", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ControllerRevision"),
	gvks("networking.k8s.io/v1beta1", 19, 22, "networking.k8s.io/v1", "Ingress", "IngressClass"),
	gvks("admissionregistration.k8s.io/v1beta1", 16, 22, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
	gvks("apiextensions.k8s.io/v1beta1", 16, 22, "apiextensions.k8s.io/v1", "CustomResourceDefinition"),
	gvks("apiregistration.k8s.io/v1beta1", 19, 22, "apiregistration.k8s.io/v1", "APIService"),
	gvks("authentication.k8s.io/v1beta1", 19, 22, "authentication.k8s.io/v1", "TokenReview"),
	gvks("authorization.k8s.io/v1beta1", 19, 22, "authorization.k8s.io/v1", "SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"),
	gvks("certificates.k8s.io/v1beta1", 19, 22, "certificates.k8s.io/v1", "CertificateSigningRequest"),
	gvks("coordination.k8s.io/v1beta1", 19, 22, "coordination.k8s.io/v1", "Lease"),
	gvks("rbac.authorization.k8s.io/v1beta1", 17, 22, "rbac.authorization.k8s.io/v1", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
	gvks("scheduling.k8s.io/v1beta1", 14, 22, "scheduling.k8s.io/v1", "PriorityClass"),
	gvks("storage.k8s.io/v1beta1", 19, 22, "storage.k8s.io/v1", "CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"),
	gvks("batch/v1beta1", 21, 25, "batch/v1", "CronJob"),
	gvks("discovery.k8s.io/v1beta1", 21, 25, "discovery.k8s.io/v1", "EndpointSlice"),
	gvks("events.k8s.io/v1beta1", 21, 25, "events.k8s.io/v1", "Event"),
	gvks("autoscaling/v2beta1", 22, 25, "autoscaling/v2", "HorizontalPodAutoscaler"),
	gvks("policy/v1beta1", 21, 25, "policy/v1", "PodDisruptionBudget"),
	[]apiChange{{GVK: schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}, Deprecated: 21, Removed: 25,
		Note:     "PodSecurityPolicy has no replacement API; use Pod Security Admission (namespace labels pod-security.kubernetes.io/*)",
		Resource: "podsecuritypolicies", ClusterScoped: true}},
	gvks("node.k8s.io/v1beta1", 22, 25, "node.k8s.io/v1", "RuntimeClass"),
	gvks("flowcontrol.apiserver.k8s.io/v1beta1", 23, 26, "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration"),
	gvks("autoscaling/v2beta2", 23, 26, "autoscaling/v2", "HorizontalPodAutoscaler"),
	gvks("storage.k8s.io/v1beta1", 24, 27, "storage.k8s.io/v1", "CSIStorageCapacity"),
	gvks("flowcontrol.apiserver.k8s.io/v1beta2", 26, 29, "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration"),
	gvks("flowcontrol.apiserver.k8s.io/v1beta3", 29, 32, "flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "PriorityLevelConfiguration"),
	[]apiChange{
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Endpoints"}, Deprecated: 33,
			Replacement: schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ComponentStatus"}, Deprecated: 19, Note: "it has no replacement"},
	},
)

func concat(lists ...[]apiChange) []apiChange {
	var out []apiChange
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

var apiChangeIndex = func() map[schema.GroupVersionKind]apiChange {
	m := map[schema.GroupVersionKind]apiChange{}
	for _, c := range apiChanges {
		m[c.GVK] = c
	}
	return m
}()

// ParseKubeVersion parses "1.36", "v1.36" or "v1.36.2" into its minor version.
func ParseKubeVersion(v string) (int, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	major, rest, ok := strings.Cut(s, ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("kubernetes version %q: want 1.N", v)
	}
	minor, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(minor)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("kubernetes version %q: want 1.N", v)
	}
	return n, nil
}

// apiStatus is what happened to gvk by Kubernetes 1.minor.
type apiStatus int

const (
	apiCurrent apiStatus = iota
	apiDeprecated
	apiRemoved
)

// checkAPI says whether gvk is deprecated or removed in 1.minor, and a
// message naming the replacement. Besides the migration guide's list, a beta
// or alpha version of a built-in kind whose GA version the 1.36 API serves is
// deprecated.
func checkAPI(gvk schema.GroupVersionKind, minor int) (apiStatus, string) {
	if c, ok := apiChangeIndex[gvk]; ok {
		status := apiCurrent
		switch {
		case c.Removed != 0 && minor >= c.Removed:
			status = apiRemoved
		case minor >= c.Deprecated:
			status = apiDeprecated
		default:
			return apiCurrent, ""
		}
		var msg string
		if status == apiRemoved {
			msg = fmt.Sprintf("%s %s is no longer served since Kubernetes 1.%d", gvk.GroupVersion(), gvk.Kind, c.Removed)
		} else {
			msg = fmt.Sprintf("%s %s is deprecated since Kubernetes 1.%d", gvk.GroupVersion(), gvk.Kind, c.Deprecated)
			if c.Removed != 0 {
				msg += fmt.Sprintf(" and removed in 1.%d", c.Removed)
			}
		}
		switch {
		case !c.Replacement.Empty() && c.Replacement.Kind != gvk.Kind:
			msg += fmt.Sprintf(": use %s %s", c.Replacement.GroupVersion(), c.Replacement.Kind)
		case !c.Replacement.Empty():
			msg += fmt.Sprintf(": use apiVersion %s", c.Replacement.GroupVersion())
		}
		if c.Note != "" {
			msg += ": " + c.Note
		}
		return status, msg
	}
	if isPrerelease(gvk.Version) {
		if _, ok := builtins.byGK[gvk.GroupKind()]; ok {
			for _, r := range builtinResources {
				if r.Group == gvk.Group && r.Kind == gvk.Kind && !isPrerelease(r.Version) {
					return apiDeprecated, prereleaseMessage(gvk, r.Group+"/"+r.Version, minor)
				}
			}
		}
	}
	return apiCurrent, ""
}

// prereleaseMessage warns of gvk, a pre-release version of a kind that the
// built-in table's Kubernetes serves as GA apiVersion ga. For an older
// target the table cannot tell since when: the message says so.
func prereleaseMessage(gvk schema.GroupVersionKind, ga string, minor int) string {
	if minor >= builtinMinor {
		return fmt.Sprintf("%s %s is a pre-release version of an API that is GA in Kubernetes 1.%d (pre-release versions are deprecated once GA and off by default): use apiVersion %s",
			gvk.GroupVersion(), gvk.Kind, minor, ga)
	}
	return fmt.Sprintf("%s %s is a pre-release version of an API that Kubernetes 1.%d serves as GA (pre-release versions are deprecated once GA and off by default); whether Kubernetes 1.%d does, chartpilot's table cannot tell: use apiVersion %s if 1.%d serves it",
		gvk.GroupVersion(), gvk.Kind, builtinMinor, minor, ga, minor)
}

// oldKind maps a kind of the migration guide that the built-in table lacks
// (removed before 1.36), for a target version that still serves it.
func oldKind(gvk schema.GroupVersionKind) (mapping, bool) {
	c, ok := apiChangeIndex[gvk]
	if !ok || c.Resource == "" {
		return mapping{}, false
	}
	return mapping{Resource: c.Resource, Namespaced: !c.ClusterScoped, Source: SourceMigrationGuide}, true
}

// unknownKindMessage warns of a kind resolved by guessing its resource.
func unknownKindMessage(gvk, target schema.GroupVersionKind, m mapping, minor int) string {
	known := fmt.Sprintf("a Kubernetes 1.%d kind", minor)
	if minor != builtinMinor {
		known = fmt.Sprintf("a Kubernetes 1.%d kind chartpilot knows (from the kinds of 1.%d and those the deprecated API migration guide lists)", minor, builtinMinor)
	}
	return fmt.Sprintf("%s %s is neither %s nor defined by the chart's CRDs: its resource name was guessed the kubectl way (lower-case kind, plural) as %q, namespaced; if its CRD says otherwise, fix the rule {apiGroups: [%q], resources: [%q], verbs: [%s]} in role.yaml, or derive RBAC against a cluster that has the CRD",
		gvk.GroupVersion(), gvk.Kind, known, m.Resource, target.Group, m.Resource, strings.Join(manageVerbs, ", "))
}

// builtinMinor is the minor version zz_builtin.go was generated from.
const builtinMinor = 36

func isPrerelease(version string) bool {
	return strings.Contains(version, "alpha") || strings.Contains(version, "beta")
}

// replacementFor is the kind to grant RBAC for in place of a removed one:
// RBAC of a kind that cannot be created is no use, and once the chart is
// fixed it creates the replacement.
func replacementFor(gvk schema.GroupVersionKind, minor int) schema.GroupVersionKind {
	if c, ok := apiChangeIndex[gvk]; ok && c.Removed != 0 && minor >= c.Removed && !c.Replacement.Empty() {
		return c.Replacement
	}
	return gvk
}

// schemaGVK parses an apiVersion and a kind.
func schemaGVK(apiVersion, kind string) schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.WithKind(kind)
}

// renderKubeVersion is .Capabilities.KubeVersion for Kubernetes 1.minor,
// whichever way the version was written ("1.30", "v1.30", "1.30.2").
func renderKubeVersion(minor int) string { return fmt.Sprintf("v1.%d.0", minor) }

// checkManifests checks the apiVersion of each manifest against Kubernetes
// 1.minor: removed ones are errors, deprecated ones warnings, each naming
// its file.
func checkManifests(ms []chart.Manifest, minor int) (errs, warns []Problem) {
	for _, m := range ms {
		gvk := m.GroupVersionKind()
		status, msg := checkAPI(gvk, minor)
		p := Problem{Template: m.Source, GVK: gvk, Message: msg}
		switch status {
		case apiRemoved:
			errs = append(errs, p)
		case apiDeprecated:
			warns = append(warns, p)
		}
	}
	return errs, warns
}

// checkCRDFiles checks the CRDs under the crds/ directories of the renders
// (the chart's and its enabled subcharts'), each file once.
func checkCRDFiles(renders []*chart.Rendered, minor int) (errs, warns []Problem) {
	seen := map[string]bool{}
	var crds []chart.Manifest
	for _, r := range renders {
		for _, m := range r.CRDs {
			key := m.Source + "\x00" + m.Object.GetAPIVersion() + "\x00" + m.Object.GetName()
			if !seen[key] {
				seen[key] = true
				crds = append(crds, m)
			}
		}
	}
	sort.SliceStable(crds, func(i, j int) bool { return crds[i].Source < crds[j].Source })
	return checkManifests(crds, minor)
}

// CheckCRDs checks the CustomResourceDefinitions a chart ships under crds/
// (its own and those of the subcharts its default values enable) against
// Kubernetes kubeVersion (default DefaultKubeVersion), as Derive does. Helm
// installs them as they are, so a removed apiVersion (apiextensions.k8s.io/
// v1beta1 since 1.22) fails every install: each is in removed, naming the
// file, its API and the replacement; deprecated ones are in deprecated.
// err says the chart could not be checked.
func CheckCRDs(c *chart.Chart, kubeVersion string) (removed, deprecated []Problem, err error) {
	minor, err := ParseKubeVersion(cmp.Or(kubeVersion, DefaultKubeVersion))
	if err != nil {
		return nil, nil, fmt.Errorf("checking the CRDs of chart %s: %w", c.Name(), err)
	}
	r, err := c.Render(chart.RenderOptions{KubeVersion: renderKubeVersion(minor)})
	if err != nil {
		return nil, nil, fmt.Errorf("checking the CRDs of chart %s: %w", c.Name(), err)
	}
	removed, deprecated = checkCRDFiles([]*chart.Rendered{r}, minor)
	return removed, deprecated, nil
}

// removedAPIError wraps ErrRemovedAPI and lists problems, or is nil.
func removedAPIError(problems []Problem, kubeVersion string) error {
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		msgs = append(msgs, p.String())
	}
	return fmt.Errorf("%w for Kubernetes %s:\n  %s", ErrRemovedAPI, kubeVersion, strings.Join(msgs, "\n  "))
}
