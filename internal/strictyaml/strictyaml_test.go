package strictyaml

import (
	"strings"
	"testing"
)

type entry struct {
	Chart    string            `json:"chart"`
	Labels   map[string]string `json:"labels,omitempty"`
	Replicas *int              `json:"replicas,omitempty"`
}

func TestUnmarshal(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       entry
		wantErr    string
		notWant    string
	}{
		{name: "exact keys", data: "chart: a\nlabels: {Key: v}\nreplicas: 2\n", want: entry{Chart: "a", Labels: map[string]string{"Key": "v"}, Replicas: new(2)}},
		{name: "a key in another case", data: "ChArt: a\n", wantErr: `unknown field "ChArt" (keys are case-sensitive)`},
		{name: "every unknown key", data: "Chart: a\nbogus: 1\n", wantErr: `unknown field "Chart"; unknown field "bogus" (keys are case-sensitive)`},
		{name: "a typo: no word on case", data: "chrat: a\n", wantErr: `unknown field "chrat"`, notWant: "case-sensitive"},
		{name: "a duplicate key", data: "chart: a\nchart: b\n", wantErr: `key "chart" already set in map`},
		{name: "a wrong type", data: "replicas: two\n", wantErr: "cannot unmarshal string into Go struct field entry.replicas of type int"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got entry
			err := Unmarshal([]byte(tt.data), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
					t.Errorf("error %v says %q", err, tt.notWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Chart != tt.want.Chart || len(got.Labels) != len(tt.want.Labels) || (got.Replicas == nil) != (tt.want.Replicas == nil) || (got.Replicas != nil && *got.Replicas != *tt.want.Replicas) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A list's entries are named by index.
func TestUnmarshalNamesTheEntry(t *testing.T) {
	var got []entry
	err := Unmarshal([]byte("- chart: a\n- chart: b\n  Labels: {}\n"), &got)
	if err == nil || !strings.Contains(err.Error(), `unknown field "[1].Labels"`) {
		t.Fatalf("error %v, want the second entry's key named", err)
	}
}
