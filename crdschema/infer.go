package crdschema

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

// FromValuesYAML infers the schema of spec from a values.yaml document.
// freeForm holds dotted value paths whose content is free-form whatever
// values.yaml shows (see FreeFormPaths).
func FromValuesYAML(data []byte, freeForm map[string]bool) (*apiextensionsv1.JSONSchemaProps, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	root := &apiextensionsv1.JSONSchemaProps{Type: "object"}
	if len(doc.Content) == 0 {
		root.XPreserveUnknownFields = ptr.To(true)
		return root, nil
	}
	n := doc.Content[0]
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: line %d: the top level is a %s, want a map", n.Line, kindName(n))
	}
	s, err := inferNode(n, "", freeForm)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "map"
	default:
		return "scalar"
	}
}

// anyValue is a schema accepting any value.
func anyValue() *apiextensionsv1.JSONSchemaProps {
	return &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}
}

func inferNode(n *yaml.Node, path string, freeForm map[string]bool) (*apiextensionsv1.JSONSchemaProps, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		s := &apiextensionsv1.JSONSchemaProps{Type: "object"}
		if len(n.Content) == 0 || freeForm[path] {
			s.XPreserveUnknownFields = ptr.To(true)
			if len(n.Content) == 0 {
				return s, nil
			}
		}
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				// A merge key: its map's keys are this map's.
				merged, err := inferNode(v, path, freeForm)
				if err != nil {
					return nil, err
				}
				for name, p := range merged.Properties {
					s.Properties[name] = p
				}
				continue
			}
			child := k.Value
			if path != "" {
				child = path + "." + k.Value
			}
			p, err := inferNode(v, child, freeForm)
			if err != nil {
				return nil, err
			}
			if d := description(k, v); d != "" {
				p.Description = d
			}
			s.Properties[k.Value] = *p
		}
		return s, nil
	case yaml.SequenceNode:
		s := &apiextensionsv1.JSONSchemaProps{Type: "array"}
		items, err := inferItems(n, path, freeForm)
		if err != nil {
			return nil, err
		}
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
		return s, nil
	case yaml.ScalarNode:
		if freeForm[path] {
			return anyValue(), nil
		}
		switch n.Tag {
		case "!!null":
			s := anyValue()
			s.Nullable = true
			return s, nil
		case "!!bool":
			return &apiextensionsv1.JSONSchemaProps{Type: "boolean"}, nil
		case "!!int", "!!float":
			// values.yaml cannot say whether 1 may be 1.5: number takes both.
			return &apiextensionsv1.JSONSchemaProps{Type: "number"}, nil
		default:
			return &apiextensionsv1.JSONSchemaProps{Type: "string"}, nil
		}
	}
	return nil, fmt.Errorf("values.yaml: line %d: unexpected YAML node", n.Line)
}

// inferItems infers a list's item schema from its elements: one type when
// they agree, any value otherwise or when the list is empty. Objects in lists
// keep unknown fields: a few examples do not list every field an item may have.
func inferItems(n *yaml.Node, path string, freeForm map[string]bool) (*apiextensionsv1.JSONSchemaProps, error) {
	if len(n.Content) == 0 || freeForm[path] {
		return anyValue(), nil
	}
	var merged *apiextensionsv1.JSONSchemaProps
	for _, e := range n.Content {
		s, err := inferNode(e, path+"[]", freeForm)
		if err != nil {
			return nil, err
		}
		if merged == nil {
			merged = s
			continue
		}
		if merged.Type != s.Type {
			return anyValue(), nil
		}
		if s.Type == "object" {
			if merged.Properties == nil {
				merged.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			for k, p := range s.Properties {
				if _, ok := merged.Properties[k]; !ok {
					merged.Properties[k] = p
				}
			}
		}
	}
	if merged.Type == "object" {
		merged.XPreserveUnknownFields = ptr.To(true)
	}
	return merged, nil
}

// description is the comment above a key (or on its line), without the
// comment markers and helm-docs' "-- " prefix.
func description(k, v *yaml.Node) string {
	text := k.HeadComment
	if text == "" {
		text = k.LineComment
	}
	if text == "" && v.Kind == yaml.ScalarNode {
		text = v.LineComment
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		l = strings.TrimSpace(strings.TrimPrefix(l, "--"))
		if l == "" || strings.HasPrefix(l, "@") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

var (
	toYAMLRef = regexp.MustCompile(`(?:toYaml|toJson|toPrettyJson|toRawJson|tpl)\s+\(?\s*\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)`)
	pipedRef  = regexp.MustCompile(`\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)\s*\|\s*(?:toYaml|toJson|toPrettyJson|toRawJson)`)
	withRef   = regexp.MustCompile(`(?s)\{\{-?\s*with\s+\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_-]*)+)\s*-?\}\}(.*?)\{\{-?\s*end`)
	dotToYAML = regexp.MustCompile(`(?:toYaml|toJson|toPrettyJson|toRawJson)\s+\.\s*`)
)

// FreeFormPaths are the value paths the chart's templates (and its
// subcharts', under their keys) render wholesale with toYaml, toJson or tpl:
// Kubernetes objects such as resources or affinity that the chart passes
// through, whose fields values.yaml cannot list.
func FreeFormPaths(ch *helmchart.Chart) map[string]bool {
	out := map[string]bool{}
	var walk func(c *helmchart.Chart, prefix string)
	walk = func(c *helmchart.Chart, prefix string) {
		for _, t := range c.Templates {
			text := string(t.Data)
			for _, re := range []*regexp.Regexp{toYAMLRef, pipedRef} {
				for _, m := range re.FindAllStringSubmatch(text, -1) {
					out[prefix+strings.TrimPrefix(m[1], ".")] = true
				}
			}
			for _, m := range withRef.FindAllStringSubmatch(text, -1) {
				if dotToYAML.MatchString(m[2]) {
					out[prefix+strings.TrimPrefix(m[1], ".")] = true
				}
			}
		}
		byName := map[string]*helmchart.Chart{}
		for _, d := range c.Dependencies() {
			byName[d.Name()] = d
		}
		for _, dep := range c.Metadata.Dependencies {
			if sub, ok := byName[dep.Name]; ok {
				key := dep.Name
				if dep.Alias != "" {
					key = dep.Alias
				}
				walk(sub, prefix+key+".")
			}
		}
	}
	walk(ch, "")
	return out
}

// sortedPaths lists a set of paths in order (for messages).
func sortedPaths(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
