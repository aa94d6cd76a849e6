package chart

import (
	"errors"
	"reflect"
	"testing"
)

// TestRenderNamesRequiredValue: a render the chart refuses with required or
// fail is a ValueError naming the template and, for required, the values
// path (subcharts' below their alias) that supplies it.
func TestRenderNamesRequiredValue(t *testing.T) {
	all := map[string]any{"ui": map[string]any{"message": "hi", "title": "t"}, "piece": map[string]any{"token": "x"}}
	tests := []struct {
		name   string
		given  map[string]any // the chart's Values (init's --values/--set)
		values map[string]any
		// want is the ValueError's location and path; nil when it renders.
		want *ValueError
	}{
		{name: "required with the value last", values: map[string]any{"piece": map[string]any{"token": "x"}}, want: &ValueError{Location: "needy/templates/configmap.yaml:9:14", Path: "ui.message", Message: "set ui.message"}},
		{name: "required at the end of a pipeline", values: map[string]any{"ui": map[string]any{"message": "hi"}, "piece": map[string]any{"token": "x"}},
			want: &ValueError{Location: "needy/templates/configmap.yaml:10:31", Path: "ui.title", Message: "a title, please"}},
		{name: "required in an aliased subchart, through $",
			want: &ValueError{Location: "needy/charts/piece/templates/secret.yaml:6:12", Path: "piece.token", Message: "the part needs a token"}},
		{name: "fail names no path", values: MergeValues(copyValues(all), map[string]any{"mode": "reckless"}),
			want: &ValueError{Location: "needy/templates/configmap.yaml:2:4", Message: "mode reckless is not supported"}},
		{name: "the chart's given values and the render's merge", given: map[string]any{"ui": map[string]any{"message": "hi"}, "piece": map[string]any{"token": "x"}},
			values: map[string]any{"ui": map[string]any{"title": "t"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(testChart("needy"))
			if err != nil {
				t.Fatal(err)
			}
			c.Values = tt.given
			_, err = c.Render(RenderOptions{Values: tt.values})
			var ve *ValueError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("render failed: %v", err)
			case tt.want == nil:
				return
			case !errors.As(err, &ve):
				t.Fatalf("error %v is no ValueError", err)
			}
			if ve.Err == nil {
				t.Error("ValueError keeps no Helm error")
			}
			got := *ve
			got.Err = nil
			if got != *tt.want {
				t.Errorf("ValueError = %+v, want %+v", *ve, *tt.want)
			}
		})
	}
}

func TestMergeValues(t *testing.T) {
	got := MergeValues(map[string]any{"a": map[string]any{"b": 1, "c": 2}, "d": []any{1}, "e": "x"},
		map[string]any{"a": map[string]any{"c": 3, "f": nil}, "d": []any{2}, "e": map[string]any{"g": true}})
	want := map[string]any{"a": map[string]any{"b": 1, "c": 3, "f": nil}, "d": []any{2}, "e": map[string]any{"g": true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MergeValues = %v, want %v", got, want)
	}
}
