package rbac

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/chartpilot/chartpilot/crdschema"
)

// kindChoices are the values a template's kind (or apiVersion) may take, as
// the CR's schema states them: the enum of the value's property, from
// values.schema.json. None when the schema does not restrict the value.
func kindChoices(spec *apiextensionsv1.JSONSchemaProps, path string) []string {
	prop, ok := property(spec, path)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range prop.Enum {
		var s string
		if json.Unmarshal(e.Raw, &s) == nil && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// property finds the schema of the value at a dotted path.
func property(spec *apiextensionsv1.JSONSchemaProps, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	if spec == nil {
		return apiextensionsv1.JSONSchemaProps{}, false
	}
	cur := *spec
	for _, k := range strings.Split(path, ".") {
		next, ok := cur.Properties[k]
		if !ok {
			return apiextensionsv1.JSONSchemaProps{}, false
		}
		cur = next
	}
	return cur, true
}

var word = regexp.MustCompile(`[A-Z][A-Za-z0-9]+`)

// mentionedKinds are the Kubernetes kinds a value's description names
// ("StatefulSet or Deployment"): likely choices, but not proven ones.
func mentionedKinds(description string) []builtinResource {
	var out []builtinResource
	for _, w := range word.FindAllString(description, -1) {
		if r, ok := builtinByKind(w); ok && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// builtinByKind finds a built-in kind by name alone, preferring the core and
// apps groups where a name is in several.
func builtinByKind(kind string) (builtinResource, bool) {
	var found []builtinResource
	for _, r := range builtinResources {
		if r.Kind == kind && !slices.ContainsFunc(found, func(f builtinResource) bool { return f.Group == r.Group }) {
			found = append(found, r)
		}
	}
	for _, preferred := range []string{"", "apps"} {
		if i := slices.IndexFunc(found, func(r builtinResource) bool { return r.Group == preferred }); i >= 0 {
			return found[i], true
		}
	}
	if len(found) > 0 {
		return found[0], true
	}
	return builtinResource{}, false
}

// unprovenKindValue is the warning for a kind chosen by a value the schema
// leaves open: what a CR choosing otherwise meets, and the rules to add.
func unprovenKindValue(source string, kv kindValue, description string) Problem {
	msg := fmt.Sprintf("the %s of a document comes from .Values.%s, which values.schema.json does not restrict to an enum: only what the default values render is granted, and a CR choosing another %s is forbidden at runtime", kv.Field, kv.Path, kv.Field)
	var rules []string
	for _, r := range mentionedKinds(description) {
		rules = append(rules, fmt.Sprintf("{apiGroups: [%q], resources: [%q], verbs: [%s]} for %s", r.Group, r.Resource, strings.Join(manageVerbs, ", "), r.Kind))
	}
	if len(rules) > 0 {
		msg += "; its description names " + strings.Join(rules, "; ") + ": add those rules to role.yaml"
	} else {
		msg += "; add a rule to role.yaml for each kind it may name"
	}
	msg += ", or declare the choices as an enum in values.schema.json and regenerate"
	return Problem{Template: source, Message: msg}
}

// renderKindChoices renders, for each template whose kind or apiVersion
// comes from a value, the chart with each choice the CR's schema allows (an
// enum), and sees what that template creates. A value the schema leaves open
// gets a warning with the rules to add instead: granting every kind is not
// least privilege, and a guess is not proof.
func (d *derivation) renderKindChoices() error {
	var spec *apiextensionsv1.JSONSchemaProps
	for _, s := range d.scans {
		for _, kv := range s.KindValues {
			if spec == nil {
				var err error
				if spec, _, err = crdschema.Spec(d.opts.Chart); err != nil {
					return fmt.Errorf("the values schema, for the choices of .Values.%s: %w", kv.Path, err)
				}
			}
			choices := kindChoices(spec, kv.Path)
			if len(choices) == 0 && d.gates.tested(kv.Path) {
				// The chart's own conditions test the value: exploring
				// them rendered the choices it knows.
				continue
			}
			if len(choices) == 0 {
				prop, _ := property(spec, kv.Path)
				d.res.Warnings = append(d.res.Warnings, unprovenKindValue(s.Source, kv, prop.Description))
				continue
			}
			for _, choice := range choices {
				d.renderKindChoice(s.Source, kv.Path, choice)
			}
		}
	}
	return nil
}

func (d *derivation) renderKindChoice(source, path, choice string) {
	vals := map[string]any{}
	setValue(vals, path, choice)
	gate := path + "=" + choice
	r, err := d.render(vals, gate, d.probes)
	if err != nil {
		d.res.Warnings = append(d.res.Warnings, Problem{Template: source, Message: fmt.Sprintf("could not render with %s to find the kind it chooses: %v", gate, err)})
		return
	}
	for _, m := range r.Objects {
		if m.Source == source {
			d.see(m, []string{gate})
		}
	}
}
