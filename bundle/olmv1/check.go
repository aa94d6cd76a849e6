package olmv1

import (
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// Problem is something about a bundle that keeps operator-controller
// v1.2.0 from installing it (LevelError) or that works otherwise than under
// OLM v0 (LevelWarning), with the fix.
type Problem struct {
	Level string `json:"level"`
	// File and Field locate it in the bundle; Object names the object.
	File   string `json:"file"`
	Field  string `json:"field,omitempty"`
	Object string `json:"object,omitempty"`
	// Message says what operator-controller does; Fix what to change.
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// Problem levels.
const (
	LevelError   = "error"
	LevelWarning = "warning"
)

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: %s; fix: %s", p.Level, p.File, p.Message, p.Fix)
}

// Check lists every reason operator-controller v1.2.0 refuses the bundle
// (errors: it stops at the first, Convert says which) and what it does
// otherwise than OLM v0 (warnings), each with its fix. None means it
// installs the bundle in AllNamespaces mode.
func Check(b *Bundle) []Problem {
	var out []Problem
	refusal := func(r *Refusal, object string) {
		if r != nil {
			out = append(out, Problem{Level: LevelError, File: r.File, Field: r.Field, Object: object, Message: r.Reason, Fix: r.Fix})
		}
	}
	opts := InstallOptions{}
	refusal(refuseSubdirectories(b, opts), "")
	refusal(refuseInstallMode(b, opts), b.CSV.Name)
	refusal(refuseAPIServices(b, opts), b.CSV.Name)
	refusal(refuseWebhooks(b, opts), b.CSV.Name)
	for _, m := range b.Others {
		refusal(refuseKind(m), m.Object.GetName())
	}
	refusal(refuseDependencies(b), b.CSV.Name)
	out = append(out, warnings(b)...)
	return out
}

// Each refusal below is where operator-controller v1.2.0 makes it.

// refuseSubdirectories: rukpak/convert ParseFS walks manifests/ and fails on
// a directory.
func refuseSubdirectories(b *Bundle, _ InstallOptions) *Refusal {
	if len(b.Subdirectories) == 0 {
		return nil
	}
	return &Refusal{File: b.Subdirectories[0],
		Reason: fmt.Sprintf("subdirectories are not allowed in manifests/ (found %s)", strings.Join(b.Subdirectories, ", ")),
		Fix:    "put every manifest directly in manifests/"}
}

// refuseInstallMode: convert validateTargetNamespaces. Without its feature
// gate operator-controller always installs for all namespaces.
func refuseInstallMode(b *Bundle, opts InstallOptions) *Refusal {
	field := "spec.installModes"
	modes := b.supportedInstallModes()
	switch ns := opts.WatchNamespace; {
	case ns == "" && b.supports(v1alpha1.InstallModeTypeAllNamespaces):
		return nil
	case ns == "":
		r := &Refusal{File: b.CSVFile, Field: field,
			Reason: fmt.Sprintf("it installs operators for all namespaces only, and the CSV does not support AllNamespaces (its install modes: %s)", listOrNone(modes)),
			Fix: "support AllNamespaces: set `supported: true` on the AllNamespaces install mode in the CSV base " +
				"(config/manifests/bases) and have the operator watch every namespace when its target namespaces are \"\" (WATCH_NAMESPACE empty)"}
		if b.supports(v1alpha1.InstallModeTypeOwnNamespace) || b.supports(v1alpha1.InstallModeTypeSingleNamespace) {
			r.Fix += "; or, where operator-controller runs with --feature-gates=SingleOwnNamespaceInstallSupport=true (v1.4 and later: " +
				"chartpilot's local cluster does), install it watching one namespace: chartpilot olm v1 install --watch-namespace NAMESPACE " +
				"(config.inline.watchNamespace; v1.2 took the ClusterExtension annotation " + WatchNamespaceAnnotation + ")"
		}
		return r
	case b.supports(v1alpha1.InstallModeTypeSingleNamespace),
		ns == opts.Namespace && b.supports(v1alpha1.InstallModeTypeOwnNamespace):
		return nil
	}
	return &Refusal{File: b.CSVFile, Field: field,
		Reason: fmt.Sprintf("the CSV's install modes (%s) do not support watching namespace %s from namespace %s", listOrNone(modes), opts.WatchNamespace, opts.Namespace),
		Fix:    "support SingleNamespace (or OwnNamespace, watching the install namespace), or install for all namespaces"}
}

// refuseAPIServices: convert refuses owned apiservicedefinitions.
func refuseAPIServices(b *Bundle, _ InstallOptions) *Refusal {
	owned := b.CSV.Spec.APIServiceDefinitions.Owned
	if len(owned) == 0 {
		return nil
	}
	return &Refusal{File: b.CSVFile, Field: "spec.apiservicedefinitions.owned",
		Reason: fmt.Sprintf("APIServices are not supported (the CSV owns %d, e.g. %s.%s)", len(owned), owned[0].Version, owned[0].Group),
		Fix:    "serve the API through a CustomResourceDefinition instead, or install the operator with OLM v0"}
}

// refuseWebhooks: convert refuses webhookdefinitions; v1.2.0 has no
// feature gate for them (later versions do).
func refuseWebhooks(b *Bundle, _ InstallOptions) *Refusal {
	hooks := b.CSV.Spec.WebhookDefinitions
	if len(hooks) == 0 {
		return nil
	}
	var names []string
	for _, h := range hooks {
		names = append(names, fmt.Sprintf("%s %s", h.Type, h.GenerateName))
	}
	return &Refusal{File: b.CSVFile, Field: "spec.webhookdefinitions",
		Reason: fmt.Sprintf("webhooks are not supported by operator-controller v1.2 (the CSV defines %s)", strings.Join(names, ", ")),
		Fix: "on OLM v1 v1.3 and later, run cert-manager or OpenShift's service-ca on the cluster: they issue the webhooks' certificates; for v1.2, drop the webhooks: validate with the CRD's OpenAPI schema and x-kubernetes-validations (CEL) rules, " +
			"default in the schema, serve one version instead of converting; or install the operator with OLM v0"}
}

// refuseKinds: convert refuses a manifest of a kind operator-registry
// v1.50.0 does not support.
func refuseKinds(b *Bundle, _ InstallOptions) *Refusal {
	for _, m := range b.Others {
		if r := refuseKind(m); r != nil {
			return r
		}
	}
	return nil
}

func refuseKind(m Manifest) *Refusal {
	kind := m.Object.GetKind()
	if Supported(kind) {
		return nil
	}
	return &Refusal{File: m.File,
		Reason: fmt.Sprintf("bundle contains unsupported resource: Name: %s, Kind: %s (v1.2.0 installs %s)", m.Object.GetName(), kind, strings.Join(supportedKindList(), ", ")),
		Fix:    fmt.Sprintf("leave the %s out of the bundle (have the operator or the chart create it), or install the operator with OLM v0", kind)}
}

// Dependency property types operator-controller refuses at resolution
// (resolve.NoDependencyValidation), and the dependencies.yaml types that
// catalogs turn into them.
var (
	refusedProperties = []string{"olm.package.required", "olm.gvk.required", "olm.constraint"}
	refusedDependency = map[string]string{"olm.package": "olm.package.required", "olm.gvk": "olm.gvk.required", "olm.constraint": "olm.constraint"}
)

func refuseDependencies(b *Bundle) *Refusal {
	var found []string
	file := ""
	for _, p := range b.Properties {
		if slices.Contains(refusedProperties, p.Type) {
			found = append(found, p.Type)
			file = p.File
		}
	}
	for _, d := range b.Dependencies {
		if prop, ok := refusedDependency[d.Type]; ok {
			found = append(found, fmt.Sprintf("%s (%s)", d.Type, prop))
			file = d.File
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &Refusal{File: file,
		Reason: fmt.Sprintf("the bundle declares dependencies (%s), which are not supported: it refuses the bundle when it resolves it", strings.Join(found, ", ")),
		Fix:    "remove the dependencies and document them: install each required package first, as a ClusterExtension of its own"}
}

// warnings are what operator-controller v1.2.0 installs but does otherwise
// than OLM v0.
func warnings(b *Bundle) []Problem {
	var out []Problem
	for _, m := range b.Others {
		if m.Object.GetKind() == "VerticalPodAutoscaler" && m.Object.GetNamespace() != "" {
			out = append(out, Problem{Level: LevelWarning, File: m.File, Object: m.Object.GetName(),
				Message: fmt.Sprintf("operator-controller %s does not move VerticalPodAutoscalers into the install namespace: this one is created in namespace %s", OperatorControllerVersion, m.Object.GetNamespace()),
				Fix:     "leave metadata.namespace out of the manifest"})
		}
	}
	if usesOperatorConditions(b.CSV) {
		out = append(out, Problem{Level: LevelWarning, File: b.CSVFile, Field: "spec.install", Object: b.CSV.Name,
			Message: "the operator uses the OperatorCondition API (operators.coreos.com operatorconditions), which OLM v1 does not provide",
			Fix:     "make the operator work without OperatorConditions (upgrade readiness is not asked under OLM v1)"})
	}
	return out
}

// usesOperatorConditions: a rule on operatorconditions, or the variable
// OLM v0 sets for it.
func usesOperatorConditions(csv *v1alpha1.ClusterServiceVersion) bool {
	s := csv.Spec.InstallStrategy.StrategySpec
	for _, p := range slices.Concat(s.Permissions, s.ClusterPermissions) {
		for _, r := range p.Rules {
			if slices.Contains(r.Resources, "operatorconditions") {
				return true
			}
		}
	}
	for _, d := range s.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "OPERATOR_CONDITION_NAME" {
					return true
				}
			}
		}
	}
	return false
}

func supportedKindList() []string {
	var out []string
	for k := range supportedKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
