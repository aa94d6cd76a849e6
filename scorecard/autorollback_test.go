package scorecard

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseAutorollbackArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// waitTime is the scorecard's, 30s unless set.
		waitTime time.Duration
		// want is the result when wantErr is empty.
		want    autorollbackArgs
		wantErr string
	}{
		{name: "defaults", want: autorollbackArgs{deadline: 15 * time.Second}},
		{name: "default deadline at most 20s", args: nil, waitTime: 90 * time.Second, want: autorollbackArgs{deadline: 20 * time.Second}},
		{name: "JSON patch and deadline", args: []string{`--spec-patch={"image":{"tag":"bad"}}`, "--health-deadline=20s"},
			want: autorollbackArgs{specPatch: map[string]any{"image": map[string]any{"tag": "bad"}}, deadline: 20 * time.Second}},
		{name: "YAML patch", args: []string{"--spec-patch", "command: [/bin/false]"},
			want: autorollbackArgs{specPatch: map[string]any{"command": []any{"/bin/false"}}, deadline: 15 * time.Second}},
		{name: "not an object", args: []string{"--spec-patch=[1]"}, wantErr: "not a YAML or JSON object"},
		{name: "zero deadline", args: []string{"--health-deadline=0s"}, wantErr: "must be positive"},
		{name: "unknown flag", args: []string{"--deadline=1s"}, wantErr: "deadline"},
		{name: "stray argument", args: []string{"now"}, wantErr: `unexpected ["now"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAutorollbackArgs(tc.args, cmp.Or(tc.waitTime, 30*time.Second))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The default patch breaks every image of the usual conventions, and
// nothing else.
func TestBreakingPatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		values    map[string]any
		want      map[string]any
		wantPaths []string
	}{
		{
			name:      "repository and tag",
			values:    map[string]any{"replicaCount": 1, "image": map[string]any{"repository": "web", "tag": "", "pullPolicy": "IfNotPresent"}},
			want:      map[string]any{"image": map[string]any{"repository": "127.0.0.1:1/chartpilot/autorollback", "tag": "broken"}},
			wantPaths: []string{"image"},
		},
		{
			name:   "registry, repository, digest, in a subchart",
			values: map[string]any{"db": map[string]any{"image": map[string]any{"registry": "r", "repository": "db", "tag": "1", "digest": "sha256:x"}}},
			want: map[string]any{"db": map[string]any{"image": map[string]any{
				"registry": "127.0.0.1:1", "repository": "chartpilot/autorollback", "tag": "broken", "digest": ""}}},
			wantPaths: []string{"db.image"},
		},
		{
			name:      "image as a string beside a map without repository",
			values:    map[string]any{"web": map[string]any{"image": "web:1"}, "cache": map[string]any{"image": map[string]any{"name": "x"}}},
			want:      map[string]any{"web": map[string]any{"image": "127.0.0.1:1/chartpilot/autorollback:broken"}},
			wantPaths: []string{"web.image"},
		},
		{name: "no image", values: map[string]any{"greeting": "hi"}, want: map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, paths := breakingPatch(tc.values)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("patch %v, want %v", got, tc.want)
			}
			if !slices.Equal(paths, tc.wantPaths) {
				t.Errorf("paths %v, want %v", paths, tc.wantPaths)
			}
		})
	}
}
