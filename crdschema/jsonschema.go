package crdschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// FromJSONSchema converts a chart's values.schema.json into a structural
// openAPIV3Schema. Local $refs (#/definitions/..., #/$defs/...) are inlined;
// composition keywords (anyOf, oneOf, allOf, not, if/then/else) and
// constructs a structural schema cannot hold make their node free-form, each
// noted in the returned warnings with its JSON pointer. Required fields that
// defaults (the chart's values) provide are not required of the CR, since
// Helm merges the defaults before validating.
func FromJSONSchema(data []byte, defaults map[string]any) (*apiextensionsv1.JSONSchemaProps, []Warning, error) {
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, nil, fmt.Errorf("values.schema.json: %w", err)
	}
	c := &converter{root: root}
	s, err := c.convert(root, "#", defaults, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("values.schema.json: %w", err)
	}
	if s.Type == "" && (s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields) {
		s.Type = "object"
	}
	if c.tooDeep > 1 {
		c.warnings = append(c.warnings, warnf(SchemaLimit, "#", "recursive $refs stopped at 32 levels in %d more places", c.tooDeep-1))
	}
	return s, c.warnings, nil
}

type converter struct {
	root     map[string]any
	warnings []Warning
	// nodes counts the schemas converted, to bound $ref expansion.
	nodes int
	// overBudget is set once a $ref was left free-form for maxNodes.
	overBudget bool
	// tooDeep counts the places recursion stopped at maxDepth; the first
	// is warned about.
	tooDeep int
}

// maxDepth bounds $ref expansion of recursive schemas.
const maxDepth = 32

// maxNodes bounds the schemas one conversion makes. A $ref is inlined at
// every use, so refs to refs multiply (two uses per level, 16 levels: 65536
// copies); a CRD must also stay far below etcd's object size limit of about
// 1.5 MiB. Past the bound, $refs are not inlined and accept any value.
const maxNodes = 10000

func (c *converter) resolveRef(ref string) (map[string]any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only local references (#/...) are supported", ref)
	}
	var cur any = c.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: not found", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q: not found", ref)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q: not a schema", ref)
	}
	return m, nil
}

func (c *converter) convert(in map[string]any, pointer string, defaults any, depth int) (*apiextensionsv1.JSONSchemaProps, error) {
	c.nodes++
	if depth > maxDepth {
		if c.tooDeep++; c.tooDeep == 1 {
			c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: recursive $ref nested deeper than 32 levels: free-form below", pointer))
		}
		return anyValue(), nil
	}
	if ref, ok := in["$ref"].(string); ok {
		return c.convertRef(in, ref, pointer, defaults, depth)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "not", "if", "then", "else", "patternProperties", "dependencies", "dependentSchemas"} {
		if _, ok := in[k]; ok {
			c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: %s is not carried into the CRD (a structural schema cannot hold it): this field accepts any value and Helm still validates it", pointer, k))
			s := anyValue()
			s.Description, _ = in["description"].(string)
			return s, nil
		}
	}
	s := &apiextensionsv1.JSONSchemaProps{}
	s.Description, _ = in["description"].(string)
	c.convertType(s, in, pointer)
	c.convertBounds(s, in, pointer)
	if err := convertEnum(s, in, pointer); err != nil {
		return nil, err
	}
	switch s.Type {
	case "array":
		if err := c.convertArray(s, in, pointer, depth); err != nil {
			return nil, err
		}
	case "object":
		if err := c.convertObject(s, in, pointer, defaults, depth); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// convertRef converts the schema a $ref points at, with the referring
// schema's description.
func (c *converter) convertRef(in map[string]any, ref, pointer string, defaults any, depth int) (*apiextensionsv1.JSONSchemaProps, error) {
	target, err := c.resolveRef(ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pointer, err)
	}
	if c.nodes > maxNodes {
		if !c.overBudget {
			c.overBudget = true
			c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: $ref %q is not inlined: with its $refs inlined the schema grows past %d schemas; this field and every $ref after it accept any value and Helm still validates them", pointer, ref, maxNodes))
		}
		s := anyValue()
		s.Description, _ = in["description"].(string)
		return s, nil
	}
	s, err := c.convert(target, pointer, defaults, depth+1)
	if err != nil {
		return nil, err
	}
	if d, ok := in["description"].(string); ok {
		s.Description = d
	}
	return s, nil
}

// convertType sets the type: one of a list with null makes it nullable, an
// integer or string int-or-string, what a CRD cannot express (a number or
// string among them: int-or-string refuses 1.5) free-form; an untyped
// schema is typed by its keywords.
func (c *converter) convertType(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string) {
	switch t := in["type"].(type) {
	case string:
		s.Type = t
	case []any:
		var types []string
		for _, e := range t {
			if str, ok := e.(string); ok && str != "null" {
				types = append(types, str)
			} else if ok {
				s.Nullable = true
			}
		}
		switch {
		case len(types) == 1:
			s.Type = types[0]
		case len(types) == 2 && types[0] == "integer" && types[1] == "string",
			len(types) == 2 && types[1] == "integer" && types[0] == "string":
			s.XIntOrString = true
		default:
			c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: type %v cannot be expressed in a CRD: this field accepts any value", pointer, types))
			s.XPreserveUnknownFields = ptr.To(true)
		}
	}
	if s.Type != "" && !crdTypes[s.Type] {
		// Helm refuses such a schema; the API server refuses the CRD.
		c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: type %q is not a JSON Schema type: this field accepts any value", pointer, s.Type))
		s.Type, s.XPreserveUnknownFields = "", ptr.To(true)
		return
	}
	if s.Type != "" || s.XIntOrString {
		return
	}
	switch {
	case in["properties"] != nil || in["additionalProperties"] != nil:
		s.Type = "object"
	case in["items"] != nil:
		s.Type = "array"
	default:
		s.XPreserveUnknownFields = ptr.To(true)
	}
}

// crdTypes are the types a CRD's schema may have.
var crdTypes = map[string]bool{"array": true, "boolean": true, "integer": true, "number": true, "object": true, "string": true}

// convertBounds carries the numeric, string and array bounds of the type,
// those the API server checks differently from JSON Schema left to Helm.
func (c *converter) convertBounds(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string) {
	bound := func(key string) (float64, bool) { return number(in[key]) }
	count := func(key string, to **int64) {
		if v, ok := bound(key); ok {
			*to = ptr.To(int64(v))
		}
	}
	switch s.Type {
	case "integer", "number":
		if v, ok := bound("minimum"); ok {
			s.Minimum = &v
		}
		if v, ok := bound("maximum"); ok {
			s.Maximum = &v
		}
		if v, ok := bound("exclusiveMinimum"); ok {
			s.Minimum, s.ExclusiveMinimum = &v, true
		}
		if v, ok := bound("exclusiveMaximum"); ok {
			s.Maximum, s.ExclusiveMaximum = &v, true
		}
		if v, ok := bound("multipleOf"); ok && v > 0 {
			// The API server divides in floating point (0.3 is no multiple
			// of 0.1 there) and wants whole factors for integers; JSON
			// Schema's check is exact. Whole factors agree.
			if v == math.Trunc(v) && v <= 1<<53 {
				s.MultipleOf = &v
			} else {
				c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: multipleOf %v is not carried into the CRD (the API server's check is not exact for fractions): Helm still validates it", pointer, v))
			}
		}
	case "string":
		count("minLength", &s.MinLength)
		count("maxLength", &s.MaxLength)
		if p, ok := in["pattern"].(string); ok {
			// JSON Schema patterns are ECMA 262; the API server compiles
			// them with Go's regexp, which has no lookaround or backrefs.
			if _, err := regexp.Compile(p); err == nil {
				s.Pattern = p
			} else {
				c.warnings = append(c.warnings, warnf(SchemaLimit, pointer, "%s: pattern %q is not carried into the CRD (Go's regexp cannot compile it): Helm still validates it", pointer, p))
			}
		}
	case "array":
		count("minItems", &s.MinItems)
		count("maxItems", &s.MaxItems)
	}
}

// convertEnum carries the enum; a null choice makes the field nullable.
func convertEnum(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string) error {
	enum, _ := in["enum"].([]any)
	for _, e := range enum {
		if e == nil {
			s.Nullable = true
			continue
		}
		raw, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("%s/enum: %w", pointer, err)
		}
		s.Enum = append(s.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	return nil
}

func (c *converter) convertArray(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string, depth int) error {
	if u, ok := in["uniqueItems"].(bool); ok && u {
		// Structural schemas forbid uniqueItems; a set list says the same.
		s.XListType = ptr.To("set")
	}
	items := anyValue()
	if m, ok := in["items"].(map[string]any); ok {
		var err error
		if items, err = c.convert(m, pointer+"/items", nil, depth+1); err != nil {
			return err
		}
	}
	if s.XListType != nil && items.Type != "string" && items.Type != "integer" && items.Type != "number" && items.Type != "boolean" {
		s.XListType = nil // a set list needs scalar items
	}
	s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
	return nil
}

func (c *converter) convertObject(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string, defaults any, depth int) error {
	defs, _ := defaults.(map[string]any)
	if err := c.convertProperties(s, in, pointer, defs, depth); err != nil {
		return err
	}
	switch ap := in["additionalProperties"].(type) {
	case map[string]any:
		p, err := c.convert(ap, pointer+"/additionalProperties", nil, depth+1)
		if err != nil {
			return err
		}
		if len(s.Properties) > 0 {
			// Structural schemas cannot have both: keep the fields, allow the rest.
			s.XPreserveUnknownFields = ptr.To(true)
		} else {
			s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: p}
		}
	case bool:
		if ap {
			s.XPreserveUnknownFields = ptr.To(true)
		}
	case nil:
		// JSON Schema allows unknown fields unless told otherwise; so does Helm.
		s.XPreserveUnknownFields = ptr.To(true)
	}
	if len(s.Properties) == 0 && s.AdditionalProperties == nil {
		s.XPreserveUnknownFields = ptr.To(true)
	}
	req, _ := in["required"].([]any)
	for _, r := range req {
		name, _ := r.(string)
		if _, hasDefault := defs[name]; hasDefault {
			continue // Helm fills it from the chart's values
		}
		if _, declared := s.Properties[name]; declared && name != "" {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

func (c *converter) convertProperties(s *apiextensionsv1.JSONSchemaProps, in map[string]any, pointer string, defs map[string]any, depth int) error {
	props, ok := in["properties"].(map[string]any)
	if !ok {
		return nil
	}
	s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		m, ok := props[k].(map[string]any)
		if !ok {
			// `true` (anything) or `false` (nothing): keep permissive.
			s.Properties[k] = *anyValue()
			continue
		}
		p, err := c.convert(m, pointer+"/properties/"+k, defs[k], depth+1)
		if err != nil {
			return err
		}
		s.Properties[k] = *p
	}
	return nil
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}
