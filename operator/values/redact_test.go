package values

import (
	"errors"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// A value that breaks a rule of values.schema.json is never quoted in the
// error, which becomes the CR's status and Events: the error names the
// field and the rule.
func TestSchemaErrorsDoNotQuoteValues(t *testing.T) {
	const secret = "hunter2-s3cr3t-T0KEN"
	tests := []struct {
		name string
		// schema is the chart's values.schema.json.
		schema string
		// sub, when set, is a subchart "db" with this schema.
		sub string
		// spec is the CR's spec.
		spec map[string]any
		// want are parts of the error: the field and the rule.
		want []string
		// leak is the value that must not appear (secret when empty).
		leak string
	}{{
		name:   "pattern",
		schema: `{"properties": {"token": {"type": "string", "pattern": "^[a-f0-9]{40}$"}}}`,
		spec:   map[string]any{"token": secret},
		want:   []string{"at '/token'", `does not match pattern "^[a-f0-9]{40}$"`},
	}, {
		name:   "format",
		schema: `{"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"url": {"type": "string", "format": "uri"}}}`,
		spec:   map[string]any{"url": secret},
		want:   []string{"at '/url'", "is not a valid uri"},
	}, {
		name: "pattern under oneOf",
		schema: `{"properties": {"auth": {"oneOf": [
			{"type": "string", "pattern": "^Bearer "},
			{"type": "string", "pattern": "^Basic "}]}}}`,
		spec: map[string]any{"auth": secret},
		want: []string{"at '/auth'", `does not match pattern "^Bearer "`, `does not match pattern "^Basic "`},
	}, {
		name:   "pattern of a subchart",
		schema: `{}`,
		sub:    `{"properties": {"password": {"type": "string", "pattern": "^.{40,}$"}}}`,
		spec:   map[string]any{"db": map[string]any{"password": secret}},
		want:   []string{"db: at '/password'", "does not match pattern"},
	}, {
		name:   "minimum",
		schema: `{"properties": {"pin": {"type": "integer", "minimum": 1000000}}}`,
		spec:   map[string]any{"pin": 987654},
		want:   []string{"at '/pin'", "minimum: want at least 1000000"},
		leak:   "987654",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := &chart.Chart{
				Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "0.1.0"},
				Schema:   []byte(tt.schema),
			}
			if tt.sub != "" {
				ch.AddDependency(&chart.Chart{
					Metadata: &chart.Metadata{APIVersion: "v2", Name: "db", Version: "0.1.0"},
					Schema:   []byte(tt.sub),
				})
			}
			_, err := Compose(ch, tt.spec, nil)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			leak := tt.leak
			if leak == "" {
				leak = secret
			}
			msg := err.Error()
			if strings.Contains(msg, leak) {
				t.Errorf("the error quotes the value %q: %s", leak, msg)
			}
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q: %s", want, msg)
				}
			}
		})
	}
}
