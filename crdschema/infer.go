package crdschema

import (
	"fmt"
	"math"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"
)

// FromValuesYAML infers the schema of spec from a values.yaml document alone:
// types from non-empty defaults (whole numbers are integers), any value where
// the default is empty ({}, [], null, ""), which proves no type,
// int-or-string where the defaults hold both or the key is a Kubernetes
// int-or-string field's name (maxUnavailable...), any scalar for a resource
// quantity's (cpu, memory, the keys of requests and limits), and
// descriptions from the comments directly above keys. TemplateUsage and
// Widen then open what the templates use more freely.
func FromValuesYAML(data []byte) (*apiextensionsv1.JSONSchemaProps, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	root := &apiextensionsv1.JSONSchemaProps{Type: "object"}
	// An empty file, or one holding only null, is no values (Helm reads
	// both as an empty map): anything may be given.
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		root.XPreserveUnknownFields = ptr.To(true)
		return root, nil
	}
	n := doc.Content[0]
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("values.yaml: line %d: the top level is a %s, want a map", n.Line, kindName(n))
	}
	budget := maxExpanded
	if err := checkAliases(n, map[*yaml.Node]bool{}, &budget); err != nil {
		return nil, err
	}
	// Helm's own reading of the file (YAML 1.1, through JSON) types the
	// scalars; the YAML nodes give the structure and the comments.
	var helm any
	if sigsyaml.Unmarshal(data, &helm) != nil {
		helm = nil
	}
	s, err := inferNode(n, helmValue{v: helm, ok: helm != nil})
	if err != nil {
		return nil, err
	}
	widenByName(s)
	return s, nil
}

// isNull tells a null scalar (null, ~ or nothing).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// maxExpanded bounds the nodes of values.yaml with its aliases expanded:
// aliases of aliases multiply (Helm's YAML reader refuses such files too).
const maxExpanded = 1 << 20

// checkAliases refuses an alias inside the value it refers to, which
// expands without end, and a document whose aliases expand past budget
// nodes. open holds the nodes being expanded.
func checkAliases(n *yaml.Node, open map[*yaml.Node]bool, budget *int) error {
	if n.Kind == yaml.AliasNode {
		if open[n.Alias] {
			return fmt.Errorf("values.yaml: line %d: alias *%s is inside the value it refers to", n.Line, n.Value)
		}
		n = n.Alias
	}
	if *budget--; *budget < 0 {
		return fmt.Errorf("values.yaml: its aliases expand to more than %d values", maxExpanded)
	}
	open[n] = true
	defer delete(open, n)
	for _, c := range n.Content {
		if err := checkAliases(c, open, budget); err != nil {
			return err
		}
	}
	return nil
}

// sameKind tells whether Helm read a map where n is a map, a list where it
// is a list, and a scalar where it is a scalar.
func sameKind(n *yaml.Node, v any) bool {
	switch v.(type) {
	case map[string]any:
		return n.Kind == yaml.MappingNode
	case []any:
		return n.Kind == yaml.SequenceNode
	}
	return n.Kind == yaml.ScalarNode
}

// helmValue is the value Helm reads where a node is, if it was found.
type helmValue struct {
	v  any
	ok bool
}

// key is the value under k in a map Helm read.
func (h helmValue) key(k string) helmValue {
	m, ok := h.v.(map[string]any)
	if !ok {
		return helmValue{}
	}
	v, ok := m[k]
	return helmValue{v: v, ok: ok}
}

// index is the i-th element of a list Helm read.
func (h helmValue) index(i int) helmValue {
	l, ok := h.v.([]any)
	if !ok || i >= len(l) {
		return helmValue{}
	}
	return helmValue{v: l[i], ok: true}
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

func inferNode(n *yaml.Node, h helmValue) (*apiextensionsv1.JSONSchemaProps, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if h.ok && !sameKind(n, h.v) {
		// Helm reads something else here: keys that collide once Helm
		// makes strings of them (0 and 000, on and true), the last wins.
		s := anyValue()
		s.Nullable = h.v == nil
		return s, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			return anyValue(), nil
		}
		return inferMap(n, h)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return anyValue(), nil
		}
		items, err := inferItems(n, h)
		if err != nil {
			return nil, err
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}}, nil
	case yaml.ScalarNode:
		return inferScalar(n, h), nil
	}
	return nil, fmt.Errorf("values.yaml: line %d: unexpected YAML node", n.Line)
}

// inferScalar types a scalar default as Helm reads it; null and "" prove
// no type.
func inferScalar(n *yaml.Node, h helmValue) *apiextensionsv1.JSONSchemaProps {
	if h.ok {
		switch v := h.v.(type) {
		case nil:
			s := anyValue()
			s.Nullable = true
			return s
		case bool:
			return &apiextensionsv1.JSONSchemaProps{Type: "boolean"}
		case float64:
			// Whole numbers written as integers are integers; past int64
			// Helm's value is a float, and so is the CR's.
			if n.Tag == "!!int" && v == math.Trunc(v) && math.Abs(v) < 1<<63 {
				return &apiextensionsv1.JSONSchemaProps{Type: "integer"}
			}
			return &apiextensionsv1.JSONSchemaProps{Type: "number"}
		case string:
			if v == "" {
				return anyValue()
			}
			return &apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
	}
	switch n.Tag {
	case "!!null":
		s := anyValue()
		s.Nullable = true
		return s
	case "!!bool":
		return &apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case "!!int":
		// Past int64 Helm's value is a float, and so is the CR's.
		var i int64
		if n.Decode(&i) != nil {
			return &apiextensionsv1.JSONSchemaProps{Type: "number"}
		}
		return &apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case "!!float":
		return &apiextensionsv1.JSONSchemaProps{Type: "number"}
	}
	if n.Value == "" {
		return anyValue()
	}
	if n.Tag == "!!str" && n.Style == 0 {
		// Helm reads values.yaml as YAML 1.1 (sigs.k8s.io/yaml), where a
		// plain yes, no, on, off, y or n is a boolean.
		var v any
		if sigsyaml.Unmarshal([]byte(n.Value), &v) == nil {
			switch v.(type) {
			case bool:
				return &apiextensionsv1.JSONSchemaProps{Type: "boolean"}
			case float64:
				return &apiextensionsv1.JSONSchemaProps{Type: "number"}
			}
		}
	}
	return &apiextensionsv1.JSONSchemaProps{Type: "string"}
}

// inferMap infers a non-empty map, merge keys (<<) included.
func inferMap(n *yaml.Node, h helmValue) (*apiextensionsv1.JSONSchemaProps, error) {
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		hv := h.key(k.Value)
		if k.Value == "<<" {
			hv = h // the merged keys are this map's
		}
		p, err := inferNode(v, hv)
		if err != nil {
			return nil, err
		}
		if k.Value == "<<" {
			// A merge key: its map's keys are this map's.
			for name, mp := range p.Properties {
				s.Properties[name] = mp
			}
			continue
		}
		if d := description(k, v); d != "" {
			p.Description = d
		}
		s.Properties[k.Value] = *p
	}
	return s, nil
}

// inferItems infers a list's item schema from its elements: one type when
// they agree (integers and numbers make numbers), any value otherwise.
// Objects in lists keep unknown fields: a few examples do not list every
// field an item may have.
func inferItems(n *yaml.Node, h helmValue) (*apiextensionsv1.JSONSchemaProps, error) {
	var merged *apiextensionsv1.JSONSchemaProps
	for i, e := range n.Content {
		s, err := inferNode(e, h.index(i))
		if err != nil {
			return nil, err
		}
		merged = mergeInferred(merged, s)
	}
	if merged.Type == "object" {
		merged.XPreserveUnknownFields = ptr.To(true)
	}
	return merged, nil
}

// mergeInferred is a schema of the values of both a and b (a nil a stands
// for no value yet), a's descriptions kept: integers and numbers make
// numbers, the fields of objects and the items of lists merge the same way
// at every depth, and anything else that differs is any value.
func mergeInferred(a, b *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	switch {
	case a == nil:
		return b
	case isNumeric(a.Type) && isNumeric(b.Type):
		if b.Type == "number" {
			a.Type = "number"
		}
	case intOrStringPair(a, b):
		// Both are meant: 8080 in one item, "http" in another.
		intOrString(a)
	case a.Type != b.Type || a.Type == "":
		return anyValue()
	case a.Type == "object":
		for k, p := range b.Properties {
			if have, ok := a.Properties[k]; ok {
				p = *mergeInferred(&have, &p)
			}
			a.Properties[k] = p
		}
	case a.Type == "array":
		a.Items.Schema = mergeInferred(a.Items.Schema, b.Items.Schema)
	}
	return a
}

func isNumeric(t string) bool { return t == "integer" || t == "number" }

// intOrStringPair tells whether a and b are each an integer, a string or
// int-or-string, and not the same one.
func intOrStringPair(a, b *apiextensionsv1.JSONSchemaProps) bool {
	kind := func(s *apiextensionsv1.JSONSchemaProps) string {
		if s.XIntOrString {
			return "int-or-string"
		}
		return s.Type
	}
	ka, kb := kind(a), kind(b)
	ok := func(k string) bool { return k == "integer" || k == "string" || k == "int-or-string" }
	return ok(ka) && ok(kb) && ka != kb
}

// widenByName widens the scalars of s (at every depth) that values.yaml
// names as a Kubernetes field taking more than their default's kind: an
// int-or-string field's (maxUnavailable: 1, targetPort: http) is
// int-or-string, a resource quantity's (cpu: 100m, or any key of requests
// or limits) any scalar. Such a key is handed to that field.
func widenByName(s *apiextensionsv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		scalar := p.Type == "integer" || p.Type == "string" || p.Type == "number"
		switch {
		case !scalar:
		case quantityFields[k]:
			reopen(&p)
		case intOrStringFields[k] && p.Type != "number":
			intOrString(&p)
		}
		if k == "requests" || k == "limits" {
			for q, qp := range p.Properties {
				if qp.Type == "integer" || qp.Type == "string" || qp.Type == "number" {
					reopen(&qp)
					p.Properties[q] = qp
				}
			}
		}
		widenByName(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		widenByName(s.Items.Schema)
	}
}

// description is the prose of the comment block directly above a key (or,
// without one, of the comment on its line), without the comment markers,
// helm-docs' "-- " prefix and @-annotations. Blocks further up (split by a
// blank line) belong to something else, and commented-out YAML such as
// "# key: value" is an example, not prose.
func description(k, v *yaml.Node) string {
	text := k.HeadComment
	if blocks := strings.Split(text, "\n\n"); len(blocks) > 1 {
		text = blocks[len(blocks)-1]
	}
	if text == "" {
		text = k.LineComment
	}
	if text == "" && v.Kind == yaml.ScalarNode {
		text = v.LineComment
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimLeft(strings.TrimSpace(l), "#")
		if isYAMLExample(l) {
			continue
		}
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "--"))
		if l == "" || strings.HasPrefix(l, "@") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

// isYAMLExample tells commented-out YAML from prose: a line that parses as
// a one-key map whose key is a single word and whose value is empty, not a
// string, quoted, in flow style or a single word ("tag: latest",
// "resources:", "  - name: x"); or a list item of such a thing. "Note: this
// is prose" and "Modes:" (a capitalised key, no value) are prose.
func isYAMLExample(line string) bool {
	t := strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(t, "- "); ok {
		return isYAMLExample(rest) || (rest != "" && !strings.ContainsAny(rest, " \t"))
	}
	var doc yaml.Node
	if yaml.Unmarshal([]byte(t), &doc) != nil || len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 || strings.ContainsAny(m.Content[0].Value, " \t") {
		return false
	}
	k, v := m.Content[0].Value, m.Content[1]
	switch {
	case v.Tag == "!!null" && v.Value == "":
		// "resources:" opens a commented-out map; "Modes:" heads prose.
		return k != "" && !unicode.IsUpper([]rune(k)[0])
	case v.Kind != yaml.ScalarNode, v.Tag != "!!str", v.Style != 0:
		return true
	}
	return !strings.ContainsAny(v.Value, " \t")
}
