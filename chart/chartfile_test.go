package chart

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadNamesChartYAMLPlaceholder: a Chart.yaml with an unquoted template
// placeholder (which Helm never renders) is an error naming the file and
// the line, not YAML's "invalid map key: map[interface {}]interface {}".
func TestLoadNamesChartYAMLPlaceholder(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "packaged-0.1.0.tgz")
	writeTgz(t, archive, map[string]string{
		"packaged/Chart.yaml":          "apiVersion: v2\nname: packaged\nversion: 0.1.0\n",
		"packaged/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"packaged/charts/x/Chart.yaml": "apiVersion: v2\nname: x\nversion: {{ .Version }}-rc\n",
	})
	tests := []struct {
		name, chart string
		want        []string
	}{
		{name: "the chart's own Chart.yaml", chart: filepath.Join("testdata", "bad", "placeholder"),
			want: []string{filepath.Join("testdata", "bad", "placeholder", "Chart.yaml") + ": line 5:", `"version: {{ .Version }}"`, "plain YAML"}},
		{name: "a subchart's Chart.yaml, comments aside", chart: filepath.Join("testdata", "bad", "subplaceholder"),
			want: []string{filepath.Join("charts", "sub", "Chart.yaml") + ": line 5:", `"appVersion: {{ .AppVersion }}"`}},
		{name: "inside a packaged chart", chart: archive,
			want: []string{archive + " (charts/x/Chart.yaml): line 3:", `{{ .Version }}-rc`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.chart)
			if err == nil {
				t.Fatal("loaded a chart whose Chart.yaml is a template")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "map[interface {}]") {
				t.Errorf("error %q shows YAML's internals", err)
			}
		})
	}
}

// TestPlaceholderIn: only placeholders YAML cannot read as a string count.
func TestPlaceholderIn(t *testing.T) {
	tests := []struct {
		name, data string
		line       int
	}{
		{name: "unquoted value", data: "name: a\nversion: {{ .Version }}\n", line: 2},
		{name: "followed by text", data: "name: a\nversion: {{ .Version }}-beta\n", line: 2},
		{name: "quoted is a string", data: "name: a\ndescription: \"{{ .X }}\"\n"},
		{name: "commented out", data: "name: a\n# version: {{ .Version }}\n"},
		{name: "none", data: "name: a\nversion: 1.0.0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := placeholderIn("Chart.yaml", []byte(tt.data))
			if ok != (tt.line != 0) || p.line != tt.line {
				t.Errorf("placeholderIn = line %d, found %v; want line %d", p.line, ok, tt.line)
			}
		})
	}
}

// writeTgz packs files (path: content) into a gzipped tar archive.
func writeTgz(t *testing.T, file string, files map[string]string) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		if content == "" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}
