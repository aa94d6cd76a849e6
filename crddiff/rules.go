package crddiff

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// fieldRule checks one attribute of a field, old against new, and clears
// it in both so that what is left over can be told apart (RuleUnhandled).
type fieldRule struct {
	rule  Rule
	check func(o, n *apiextensionsv1.JSONSchemaProps) string // the detail of an unsafe change, or ""
}

// fieldRules in OLM v1's order; a description change is safe and only
// cleared.
var fieldRules = []fieldRule{
	{"", func(o, n *apiextensionsv1.JSONSchemaProps) string { o.Description, n.Description = "", ""; return "" }},
	{RuleEnum, enumChange},
	{RuleRequired, requiredChange},
	{RuleMaximum, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := upperBound("maximum", o.Maximum, n.Maximum)
		o.Maximum, n.Maximum = nil, nil
		return d
	}},
	{RuleMaxItems, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := upperBound("maxItems", o.MaxItems, n.MaxItems)
		o.MaxItems, n.MaxItems = nil, nil
		return d
	}},
	{RuleMaxLength, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := upperBound("maxLength", o.MaxLength, n.MaxLength)
		o.MaxLength, n.MaxLength = nil, nil
		return d
	}},
	{RuleMaxProperties, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := upperBound("maxProperties", o.MaxProperties, n.MaxProperties)
		o.MaxProperties, n.MaxProperties = nil, nil
		return d
	}},
	{RuleMinimum, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := lowerBound("minimum", o.Minimum, n.Minimum)
		o.Minimum, n.Minimum = nil, nil
		return d
	}},
	{RuleMinItems, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := lowerBound("minItems", o.MinItems, n.MinItems)
		o.MinItems, n.MinItems = nil, nil
		return d
	}},
	{RuleMinLength, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := lowerBound("minLength", o.MinLength, n.MinLength)
		o.MinLength, n.MinLength = nil, nil
		return d
	}},
	{RuleMinProperties, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := lowerBound("minProperties", o.MinProperties, n.MinProperties)
		o.MinProperties, n.MinProperties = nil, nil
		return d
	}},
	{RuleDefault, defaultChange},
	{RuleType, func(o, n *apiextensionsv1.JSONSchemaProps) string {
		d := ""
		if o.Type != n.Type {
			d = fmt.Sprintf("type changed from %s to %s", typeName(o.Type), typeName(n.Type))
		}
		o.Type, n.Type = "", ""
		return d
	}},
}

// compareField runs every rule on copies of a field's old and new schema
// (without children), then reports whatever else differs as unhandled.
func compareField(o, n *apiextensionsv1.JSONSchemaProps) []Change {
	var out []Change
	for _, r := range fieldRules {
		if d := r.check(o, n); d != "" {
			out = append(out, Change{Rule: r.rule, Detail: d})
		}
	}
	if !equality.Semantic.DeepEqual(o, n) {
		out = append(out, Change{Rule: RuleUnhandled, Detail: "changed: " + strings.Join(differingKeys(o, n), ", ")})
	}
	return out
}

func enumChange(o, n *apiextensionsv1.JSONSchemaProps) string {
	ov, nv := rawSet(o.Enum), rawSet(n.Enum)
	o.Enum, n.Enum = nil, nil
	var removed []string
	for v := range ov {
		if !nv[v] {
			removed = append(removed, v)
		}
	}
	slices.Sort(removed)
	switch {
	case len(ov) == 0 && len(nv) > 0:
		return fmt.Sprintf("enum [%s] added where any value was allowed", strings.Join(slices.Sorted(maps.Keys(nv)), ", "))
	case len(removed) > 0:
		return fmt.Sprintf("enum values [%s] removed", strings.Join(removed, ", "))
	}
	return "" // values added: safe
}

func rawSet(vs []apiextensionsv1.JSON) map[string]bool {
	out := map[string]bool{}
	for _, v := range vs {
		out[string(v.Raw)] = true
	}
	return out
}

func requiredChange(o, n *apiextensionsv1.JSONSchemaProps) string {
	var added []string
	for _, r := range n.Required {
		if !slices.Contains(o.Required, r) && !slices.Contains(added, r) {
			added = append(added, r)
		}
	}
	o.Required, n.Required = nil, nil
	if len(added) == 0 {
		return ""
	}
	slices.Sort(added)
	return fmt.Sprintf("new required field(s) %s", strings.Join(added, ", "))
}

func upperBound[T cmp.Ordered](name string, o, n *T) string {
	switch {
	case o == nil && n != nil:
		return fmt.Sprintf("%s %v added where there was none", name, *n)
	case o != nil && n != nil && *n < *o:
		return fmt.Sprintf("%s lowered from %v to %v", name, *o, *n)
	}
	return ""
}

func lowerBound[T cmp.Ordered](name string, o, n *T) string {
	switch {
	case o == nil && n != nil:
		return fmt.Sprintf("%s %v added where there was none", name, *n)
	case o != nil && n != nil && *n > *o:
		return fmt.Sprintf("%s raised from %v to %v", name, *o, *n)
	}
	return ""
}

func defaultChange(o, n *apiextensionsv1.JSONSchemaProps) string {
	od, nd := o.Default, n.Default
	o.Default, n.Default = nil, nil
	switch {
	case od == nil && nd != nil:
		return fmt.Sprintf("default %s added where there was none", nd.Raw)
	case od != nil && nd == nil:
		return fmt.Sprintf("default %s removed", od.Raw)
	case od != nil && nd != nil && !bytes.Equal(od.Raw, nd.Raw):
		return fmt.Sprintf("default changed from %s to %s", od.Raw, nd.Raw)
	}
	return ""
}

func typeName(t string) string {
	if t == "" {
		return "any type"
	}
	return t
}

// differingKeys names the schema keywords that differ between a and b.
func differingKeys(a, b *apiextensionsv1.JSONSchemaProps) []string {
	am, bm := asMap(a), asMap(b)
	var out []string
	for k := range am {
		if !reflect.DeepEqual(am[k], bm[k]) {
			out = append(out, k)
		}
	}
	for k := range bm {
		if _, ok := am[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		out = append(out, "the schema")
	}
	return out
}

func asMap(s *apiextensionsv1.JSONSchemaProps) map[string]any {
	data, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	m := map[string]any{}
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return m
}

// explain is why a change is unsafe and what to do instead.
func explain(c Change) (why, fix string) {
	newVersion := "or add a new API version (chartpilot create api --version) that has the change, keeping this one"
	switch c.Rule {
	case RuleScope:
		return "the CRs on the cluster keep their scope: the API server cannot move them between namespaced and cluster-scoped",
			"keep the scope; another scope needs a new CRD (another kind or group)"
	case RuleStoredVersionRemoval:
		return "CRs are still stored in that version: without it the API server cannot read them",
			"keep the version (served: false is enough) until every CR is migrated to the storage version and status.storedVersions trimmed (the operator does it at start-up when it watches all namespaces; chartpilot olm migrate otherwise)"
	case RuleExistingFieldRemoval:
		return "CRs that set the field lose it: the API server prunes it without a word",
			"keep the field (say in its description that it is deprecated and ignored), " + newVersion
	case RuleEnum:
		return "CRs holding a value no longer allowed fail validation on their next update",
			"keep every value allowed before (adding values is safe), " + newVersion
	case RuleRequired:
		return "CRs without the field fail validation on their next update",
			"keep the field optional and give it a default in values.yaml, " + newVersion
	case RuleMaximum, RuleMaxItems, RuleMaxLength, RuleMaxProperties, RuleMinimum, RuleMinItems, RuleMinLength, RuleMinProperties:
		return "CRs outside the new bound fail validation on their next update",
			"keep the old bound (loosening is safe), " + newVersion
	case RuleDefault:
		return "the API server applies a CRD's defaults to every CR it reads: CRs that relied on the old default change meaning",
			"keep the CRD's default and change the value in the chart's values.yaml instead, " + newVersion
	case RuleType:
		return "CRs hold values of the old type and fail validation on their next update",
			"keep the type (OLM v1 refuses a widened type too: put values of another type in a new field), " + newVersion
	}
	return "OLM v1 cannot tell whether this change is safe and refuses it",
		"revert this part of the change, " + newVersion
}
