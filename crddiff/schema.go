package crddiff

import (
	"maps"
	"slices"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// rootPath is the path of the schema's root ("the whole object").
const rootPath = "."

// flatten maps every location of a schema to the schema found there,
// without its child properties and items (each child is a location of its
// own). A location is the field path as a CR writes it: subschemas of
// allOf, anyOf, oneOf and not describe their parent's location; when
// several describe one location, the last in this walk's order counts (as
// in OLM v1's check: the node itself, items, allOf, anyOf, oneOf, not,
// then properties and additionalProperties).
func flatten(s *apiextensionsv1.JSONSchemaProps) map[string]*apiextensionsv1.JSONSchemaProps {
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	walk(s, rootPath, out)
	return out
}

func walk(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]*apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	out[path] = withoutChildren(s)
	if s.Items != nil {
		walk(s.Items.Schema, join(path, "[*]"), out)
		for i := range s.Items.JSONSchemas {
			walk(&s.Items.JSONSchemas[i], join(path, "["+strconv.Itoa(i)+"]"), out)
		}
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			walk(&list[i], path, out)
		}
	}
	walk(s.Not, path, out)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		walk(&p, join(path, name), out)
	}
	if s.AdditionalProperties != nil {
		walk(s.AdditionalProperties.Schema, join(path, "[*]"), out)
	}
	// patternProperties, definitions, dependencies and additionalItems are
	// forbidden in CRD schemas; OLM v1 reads them as the parent's location.
	for _, name := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		p := s.PatternProperties[name]
		walk(&p, path, out)
	}
	if s.AdditionalItems != nil {
		walk(s.AdditionalItems.Schema, path, out)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Definitions)) {
		p := s.Definitions[name]
		walk(&p, path, out)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Dependencies)) {
		walk(s.Dependencies[name].Schema, path, out)
	}
}

func join(path, child string) string {
	switch {
	case path == rootPath:
		return child
	case child[0] == '[':
		return path + child
	}
	return path + "." + child
}

func withoutChildren(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	c := s.DeepCopy()
	c.Properties, c.Items = nil, nil
	return c
}

// compareSchemas lists the unsafe changes from the old schema to the new
// one: the fields removed, then each kept field's changes.
func compareSchemas(old, new *apiextensionsv1.JSONSchemaProps) []Change {
	of, nf := flatten(old), flatten(new)
	var out []Change
	for _, path := range slices.Sorted(maps.Keys(of)) {
		n, ok := nf[path]
		if !ok {
			out = append(out, Change{Path: path, Rule: RuleExistingFieldRemoval, Detail: "field removed"})
			continue
		}
		if equality.Semantic.DeepEqual(of[path], n) {
			continue
		}
		for _, c := range compareField(of[path].DeepCopy(), n.DeepCopy()) {
			c.Path = path
			out = append(out, c)
		}
	}
	return out
}
