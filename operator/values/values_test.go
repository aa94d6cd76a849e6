package values

import (
	"errors"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

func chartWithSchema(schema string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "0.1.0"},
		Values:   map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "nginx", "tag": "1.27"}},
		Schema:   []byte(schema),
	}
}

const schema = `{
  "type": "object",
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 1},
    "image": {"type": "object", "properties": {"tag": {"type": "string"}}}
  }
}`

func TestCompose(t *testing.T) {
	tests := []struct {
		name      string
		spec      any
		overrides map[string]string
		// want maps dotted paths to expected values
		want    map[string]any
		wantErr string
	}{
		{name: "nil spec", spec: nil, want: map[string]any{}},
		{name: "spec passes through", spec: map[string]any{"replicaCount": int64(3)}, want: map[string]any{"replicaCount": float64(3)}},
		{
			name:      "overrides win over the spec",
			spec:      map[string]any{"image": map[string]any{"tag": "from-cr"}},
			overrides: map[string]string{"image.tag": "from-watch", "extra.list[0]": "a"},
			want:      map[string]any{"image.tag": "from-watch", "extra.list": []any{"a"}},
		},
		{name: "spec not an object", spec: []any{"a"}, wantErr: "spec is a []interface {}, not an object"},
		{name: "schema violation names the field", spec: map[string]any{"replicaCount": 0}, wantErr: "at '/replicaCount'"},
		{name: "schema type error", spec: map[string]any{"image": map[string]any{"tag": 5}}, wantErr: "at '/image/tag': got number, want string"},
		{name: "bad override key", overrides: map[string]string{"a[": "secret-value"}, wantErr: `overrideValues key "a[": not in helm --set syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compose(chartWithSchema(schema), tt.spec, tt.overrides)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret-value") {
					t.Errorf("error leaks an override value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.want {
				if v := lookup(got, path); !equal(v, want) {
					t.Errorf("%s = %#v, want %#v", path, v, want)
				}
			}
		})
	}
}

// The CR's object must not be changed by composing.
func TestComposeDoesNotMutateSpec(t *testing.T) {
	spec := map[string]any{"image": map[string]any{"tag": "cr"}}
	if _, err := Compose(chartWithSchema(schema), spec, map[string]string{"image.tag": "override"}); err != nil {
		t.Fatal(err)
	}
	if spec["image"].(map[string]any)["tag"] != "cr" {
		t.Error("spec mutated")
	}
}

func TestDigest(t *testing.T) {
	a := map[string]any{"a": 1, "b": map[string]any{"c": "x", "d": []any{1, 2}}}
	b := map[string]any{"b": map[string]any{"d": []any{1, 2}, "c": "x"}, "a": 1}
	if Digest(a) != Digest(b) {
		t.Error("digest depends on key order")
	}
	if Digest(a) == Digest(map[string]any{"a": 2}) {
		t.Error("different values, same digest")
	}
}

func lookup(m map[string]any, path string) any {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func equal(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		if len(as) != len(bs) {
			return false
		}
		for i := range as {
			if as[i] != bs[i] {
				return false
			}
		}
		return true
	}
	return a == b
}
