package release

import "testing"

// What counts as drift between a desired object and the live one.
func TestFirstDifference(t *testing.T) {
	tests := []struct {
		name          string
		desired, live map[string]any
		want          string
	}{
		{name: "equal", desired: map[string]any{"a": "x"}, live: map[string]any{"a": "x"}},
		{name: "fields only live", desired: map[string]any{"a": "x"}, live: map[string]any{"a": "x", "b": 1}},
		{name: "changed", desired: map[string]any{"a": "x"}, live: map[string]any{"a": "y"}, want: ".a"},
		{name: "false the server dropped", desired: map[string]any{"globalDefault": false}, live: map[string]any{}},
		{name: "zero the server dropped", desired: map[string]any{"n": int64(0)}, live: map[string]any{}},
		{name: "false changed to true", desired: map[string]any{"globalDefault": false}, live: map[string]any{"globalDefault": true}, want: ".globalDefault"},
		{name: "true dropped", desired: map[string]any{"globalDefault": true}, live: map[string]any{}, want: ".globalDefault"},
		{name: "quantity notation", desired: map[string]any{"cpu": "0.5"}, live: map[string]any{"cpu": "500m"}},
		{name: "status ignored", desired: map[string]any{"status": map[string]any{"a": 1}}, live: map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstDifference(tt.desired, tt.live, ""); got != tt.want {
				t.Errorf("firstDifference = %q, want %q", got, tt.want)
			}
		})
	}
}
