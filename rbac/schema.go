package rbac

import (
	"encoding/json"
	"strings"

	"github.com/chartpilot/chartpilot/chart"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// valueSchemas are the values.schema.json of a chart and its subcharts:
// what a value the derivation makes up must satisfy, since Helm checks it.
type valueSchemas struct {
	// byPrefix holds each chart's schema by where its values sit in the
	// top chart's ("" for the top chart).
	byPrefix map[string]map[string]any
}

func loadValueSchemas(ch *helmchart.Chart) valueSchemas {
	s := valueSchemas{byPrefix: map[string]map[string]any{}}
	s.load(ch, "")
	return s
}

func (s valueSchemas) load(ch *helmchart.Chart, prefix string) {
	if len(ch.Schema) > 0 {
		var doc map[string]any
		if json.Unmarshal(ch.Schema, &doc) == nil {
			s.byPrefix[prefix] = doc
		}
	}
	for _, sub := range chart.Subcharts(ch) {
		p := sub.Key
		if prefix != "" {
			p = prefix + "." + sub.Key
		}
		s.load(sub.Chart, p)
	}
}

// property is the schema of the value at a dotted path, from the deepest
// chart whose values hold it; nil when no schema says.
func (s valueSchemas) property(path string) map[string]any {
	keys := strings.Split(path, ".")
	for i := len(keys); i >= 0; i-- {
		doc, ok := s.byPrefix[strings.Join(keys[:i], ".")]
		if !ok {
			continue
		}
		cur := doc
		for _, k := range keys[i:] {
			props, _ := cur["properties"].(map[string]any)
			next, ok := props[k].(map[string]any)
			if !ok {
				return nil
			}
			cur = next
		}
		return cur
	}
	return nil
}

// schemaValue is a non-empty value the schema at path accepts, or nil when
// the schema does not say (or has no simple answer).
func (s valueSchemas) schemaValue(path string) any {
	p := s.property(path)
	if p == nil {
		return nil
	}
	if enum, ok := p["enum"].([]any); ok {
		for _, e := range enum {
			if truthy(e) {
				return e
			}
		}
	}
	types := schemaTypes(p)
	switch {
	case len(types) != 1:
		return nil
	case types[0] == "integer" || types[0] == "number":
		if m, ok := p["minimum"].(float64); ok && m > 1 {
			return int64(m)
		}
		return int64(1)
	case types[0] == "boolean":
		return true
	case types[0] == "string":
		return ExploredValue
	}
	return nil
}

// schemaTypes is the type keyword as a list.
func schemaTypes(p map[string]any) []string {
	switch t := p["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
