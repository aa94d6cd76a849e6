package crdschema

import (
	"fmt"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Admit opens schema s wherever it would refuse or prune values given for
// the chart besides its values.yaml (chartpilot's --values and --set):
// they are what the user means to deploy, and Helm renders them. Each
// place opened is a warning; where is the chart's name.
func Admit(s *apiextensionsv1.JSONSchemaProps, values map[string]any, where string) []Warning {
	if len(values) == 0 {
		return nil
	}
	var warnings []Warning
	admitMap(s, values, nil, &warnings)
	for i, w := range warnings {
		warnings[i] = w.prefixed(fmt.Sprintf("chart %s: ", where))
	}
	return warnings
}

func admitMap(s *apiextensionsv1.JSONSchemaProps, values map[string]any, path []string, warnings *[]Warning) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := s.Properties[k]
		switch {
		case ok:
			admit(&p, values[k], append(path, k), warnings)
			s.Properties[k] = p
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			admit(s.AdditionalProperties.Schema, values[k], append(path, k), warnings)
		case !preserves(s):
			if s.Properties == nil {
				s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			s.Properties[k] = *anyValue()
			*warnings = append(*warnings, warnf(Undeclared, ".Values."+dotted(append(path, k)), "the values given set .Values.%s, which the chart does not declare: the CRD accepts any value there", dotted(append(path, k))))
		}
	}
}

// admit opens s where v does not fit it.
func admit(s *apiextensionsv1.JSONSchemaProps, v any, path []string, warnings *[]Warning) {
	if isOpen(s) {
		return
	}
	if v == nil {
		s.Nullable = true
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if s.Type == "object" {
			admitMap(s, v, path, warnings)
			return
		}
	case []any:
		if s.Type == "array" {
			if s.Items == nil || s.Items.Schema == nil {
				return
			}
			for _, e := range v {
				admit(s.Items.Schema, e, append(path, Elem), warnings)
			}
			return
		}
	default:
		if fits(s, v) {
			return
		}
	}
	was := s.Type
	if s.XIntOrString {
		was = "int-or-string"
	}
	reopen(s)
	*warnings = append(*warnings, warnf(Opened, ".Values."+dotted(path), "the values given set .Values.%s to %s, where the chart's values make it %s: the CRD accepts any value there",
		dotted(path), article(jsonType(v)), article(was)))
}

// fits tells whether scalar v has a type s accepts (its other checks,
// from values.schema.json, Helm makes too).
func fits(s *apiextensionsv1.JSONSchemaProps, v any) bool {
	t := jsonType(v)
	switch {
	case s.Type == t, s.Type == "" && !s.XIntOrString:
		return true
	case s.XIntOrString:
		return t == "integer" || t == "string"
	}
	return s.Type == "number" && t == "integer"
}

// jsonType is the JSON Schema type of a value as Helm's readers make it.
func jsonType(v any) string {
	switch v := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int32, int64, uint, uint32, uint64:
		return "integer"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case float32:
		return jsonType(float64(v))
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return "string"
}
