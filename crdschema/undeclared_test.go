package crdschema

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// A values.schema.json that declares some keys and leaves the object open:
// values.yaml's other keys get fields (the scorecard wants the sample's
// fields in the schema); a closed object gets none.
func TestAddUndeclared(t *testing.T) {
	tests := []struct {
		name, schema string
		want         map[string]string // field -> type; "" for absent
	}{{
		name:   "open: values.yaml's keys join the declared ones",
		schema: `{"type":"object","properties":{"replicas":{"type":"integer"},"nested":{"type":"object","properties":{"a":{"type":"string"}}}}}`,
		want:   map[string]string{"replicas": "integer", "minReadySeconds": "integer", "route": "object", "nested.b": "boolean"},
	}, {
		name:   "closed: nothing joins",
		schema: `{"type":"object","additionalProperties":false,"properties":{"replicas":{"type":"integer"},"nested":{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"}}}}}`,
		want:   map[string]string{"replicas": "integer", "minReadySeconds": "", "route": "", "nested.b": ""},
	}}
	values := []byte("replicas: 1\nminReadySeconds: 0\nroute:\n  enabled: false\nnested:\n  a: x\n  b: true\n")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := FromJSONSchema([]byte(tt.schema), nil)
			if err != nil {
				t.Fatal(err)
			}
			inferred, err := FromValuesYAML(values)
			if err != nil {
				t.Fatal(err)
			}
			addUndeclared(s, inferred)
			if r, ok := property(s, "route"); ok && (r.XPreserveUnknownFields == nil || !*r.XPreserveUnknownFields) {
				t.Error("route, typed from values.yaml, refuses keys values.yaml does not show")
			}
			for field, typ := range tt.want {
				p, ok := property(s, field)
				if got := p.Type; (typ == "" && ok) || (typ != "" && got != typ) {
					t.Errorf("%s: type %q (present %v), want %q", field, got, ok, typ)
				}
			}
		})
	}
}

// property is the schema at a dotted path of s.
func property(s *apiextensionsv1.JSONSchemaProps, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	cur := *s
	for _, k := range strings.Split(path, ".") {
		next, ok := cur.Properties[k]
		if !ok {
			return apiextensionsv1.JSONSchemaProps{}, false
		}
		cur = next
	}
	return cur, true
}
