package bundle

import (
	"slices"
	"strings"
	"unicode"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// x-descriptors of OLM's console for the schema types.
const (
	xdBoolean    = "urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	xdNumber     = "urn:alm:descriptor:com.tectonic.ui:number"
	xdText       = "urn:alm:descriptor:com.tectonic.ui:text"
	xdResources  = "urn:alm:descriptor:com.tectonic.ui:resourceRequirements"
	xdFieldGroup = "urn:alm:descriptor:com.tectonic.ui:fieldGroup:"
	xdConditions = "urn:alm:descriptor:io.kubernetes.conditions"
)

// descriptorDepth is how deep spec descriptors go: top-level fields (what
// scorecard's olm-spec-descriptors test checks) and the fields of
// top-level objects, grouped under their parent in the console.
const descriptorDepth = 2

// specDescriptors describes the fields of a CRD's spec schema, sorted by
// path, with display names from the field names, descriptions from the
// schema and x-descriptors from the types.
func specDescriptors(spec apiextensionsv1.JSONSchemaProps) []v1alpha1.SpecDescriptor {
	var out []v1alpha1.SpecDescriptor
	var walk func(props map[string]apiextensionsv1.JSONSchemaProps, prefix []string)
	walk = func(props map[string]apiextensionsv1.JSONSchemaProps, prefix []string) {
		for _, name := range sortedKeys(props) {
			p := props[name]
			path := append(slices.Clone(prefix), name)
			d := v1alpha1.SpecDescriptor{Path: strings.Join(path, "."), DisplayName: displayName(name), Description: firstSentence(p.Description)}
			if x := xDescriptor(name, p); x != "" {
				d.XDescriptors = []string{x}
			}
			if len(prefix) > 0 {
				d.XDescriptors = append(d.XDescriptors, xdFieldGroup+prefix[0])
			}
			out = append(out, d)
			if p.Type == "object" && len(p.Properties) > 0 && len(path) < descriptorDepth {
				walk(p.Properties, path)
			}
		}
	}
	walk(spec.Properties, nil)
	return out
}

// statusDescriptors describes the top-level fields of a status schema.
func statusDescriptors(status apiextensionsv1.JSONSchemaProps) []v1alpha1.StatusDescriptor {
	var out []v1alpha1.StatusDescriptor
	for _, name := range sortedKeys(status.Properties) {
		p := status.Properties[name]
		d := v1alpha1.StatusDescriptor{Path: name, DisplayName: displayName(name), Description: firstSentence(p.Description)}
		if name == "conditions" {
			d.XDescriptors = []string{xdConditions}
		} else if x := xDescriptor(name, p); x != "" {
			d.XDescriptors = []string{x}
		}
		out = append(out, d)
	}
	return out
}

func xDescriptor(name string, p apiextensionsv1.JSONSchemaProps) string {
	switch {
	case name == "resources" && (p.Type == "object" || p.Type == ""):
		// An empty default leaves resources untyped; it is still a chart's
		// ResourceRequirements by convention, which the console edits.
		return xdResources
	case p.Type == "boolean":
		return xdBoolean
	case p.Type == "integer" || p.Type == "number":
		return xdNumber
	case p.Type == "string", p.XIntOrString:
		// An int-or-string is typed in as text: the console's text field
		// sends a number's digits as a string, which the CRD accepts.
		return xdText
	}
	return ""
}

// firstSentence keeps descriptions short, as the console shows them inline.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// displayName turns a field, kind or project name into words:
// "replicaCount" -> "Replica Count", "my-operator" -> "My Operator".
func displayName(name string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '-' || r == '_' || r == '.' || r == ' ':
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			// A new word starts at an upper-case letter, except inside an
			// acronym ("CPUUtilization" -> "CPU Utilization").
			prevUpper := unicode.IsUpper(cur[len(cur)-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if !prevUpper || nextLower {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}
