package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValuesFlags: --values and --set give init, generate and create api
// the values a chart requires; init records them for generate, and a
// missing one is named with the flag that gives it.
func TestValuesFlags(t *testing.T) {
	needy := filepath.Join("..", "..", "chart", "testdata", "charts", "needy")
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "op")
	title := filepath.Join(tmp, "title.yaml")
	if err := os.WriteFile(title, []byte("ui:\n  title: Welcome\n  message: from the file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recorded := filepath.Join(dir, "helm-values", "charts.example.com_v1alpha1_needy.yaml")
	sample := filepath.Join(dir, "config", "samples", "charts.example.com_v1alpha1_needy.yaml")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		// want are substrings of files after the command, by path.
		want map[string][]string
	}{
		{name: "a required value missing is named with its flag", args: []string{"init", dir, "--chart", needy},
			wantErr: `chart needy needs value piece.token (required: "the part needs a token"): pass --set piece.token=... or --values FILE`},
		{name: "values files and --set, later ones winning", args: []string{"init", dir, "--chart", needy, "--values", title, "--set", "piece.token=s3cret,ui.message=hello"},
			want: map[string][]string{recorded: {"piece:\n  token: s3cret\n", "ui:\n  message: hello\n  title: Welcome\n"},
				sample: {"message: hello", "token: s3cret", "title: Welcome"}}},
		{name: "generate renders with the recorded values", args: []string{"generate", "--project-dir", dir}},
		{name: "generate --set replaces them", args: []string{"generate", "--project-dir", dir, "--set", "ui.message=hi"},
			wantErr: "pass --set piece.token=... or --values FILE"},
		{name: "generate --values records the new ones", args: []string{"generate", "--project-dir", dir, "--values", title, "--set-string", "piece.token=123"},
			want: map[string][]string{recorded: {"token: \"123\"", "message: from the file"}}},
		{name: "generate --kind names a kind the project serves", args: []string{"generate", "--project-dir", dir, "--kind", "Other", "--set", "a=b"},
			wantErr: "values given for kind Other, which the project does not serve (it serves Needy)"},
		{name: "a values file that is not there", args: []string{"generate", "--project-dir", dir, "--values", filepath.Join(tmp, "none.yaml")},
			wantErr: "none.yaml"},
		{name: "--set in Helm's syntax", args: []string{"generate", "--project-dir", dir, "--set", "a={b"},
			wantErr: "values: failed parsing --set data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			for file, wants := range tt.want {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range wants {
					if !strings.Contains(string(data), w) {
						t.Errorf("%s lacks %q:\n%s", file, w, data)
					}
				}
			}
		})
	}
}
