package chart_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/pull"
)

// The tests of package chart/pull live here: a test binary of its own would
// link Helm's clients once more in go test ./..., and chart's links them
// anyway.

// TestPull serves a real chart repository (index.yaml and packaged charts)
// over HTTP and pulls from it.
func TestPull(t *testing.T) {
	t.Setenv("HELM_CACHE_HOME", t.TempDir())
	t.Setenv("HELM_CONFIG_HOME", t.TempDir())
	served := t.TempDir()
	for _, name := range []string{"webapp", "umbrella"} {
		c, err := chart.Load(chart.TestChart(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chartutil.Save(c.Helm, served); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()
	idx, err := repo.IndexDirectory(served, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(served+"/index.yaml", 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, chart, version string
		wantFile, wantErr    string
	}{
		{name: "exact version", chart: "webapp", version: "0.1.0", wantFile: "webapp-0.1.0.tgz"},
		{name: "latest", chart: "umbrella", wantFile: "umbrella-1.2.0.tgz"},
		{name: "constraint", chart: "umbrella", version: "^1.0.0", wantFile: "umbrella-1.2.0.tgz"},
		{name: "no such version", chart: "webapp", version: "9.9.9", wantErr: `chart "webapp" version "9.9.9" not found`},
		{name: "no such chart", chart: "nope", wantErr: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, err := pull.Chart(pull.Options{RepoURL: srv.URL, Name: tt.chart, Version: tt.version, Dest: t.TempDir()})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("pull.Chart() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(path, "/"+tt.wantFile) {
				t.Errorf("path = %s, want .../%s", path, tt.wantFile)
			}
			pulled, err := chart.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			local, err := chart.Load(chart.TestChart(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			got, err := pulled.Render(chart.RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := local.Render(chart.RenderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(chart.ObjectList(got), chart.ObjectList(want)) {
				t.Errorf("pulled chart renders %q, want %q", chart.ObjectList(got), chart.ObjectList(want))
			}
		})
	}
}
