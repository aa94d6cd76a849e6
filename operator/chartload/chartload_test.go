package chartload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeChart(t *testing.T, dir, apiVersion string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"Chart.yaml":            "apiVersion: " + apiVersion + "\nname: " + filepath.Base(dir) + "\nversion: 0.1.0\n",
		"values.yaml":           "a: 1\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name, top, sub string
		wantErr        string
	}{
		{name: "v2", top: "v2"},
		{name: "v1", top: "v1"},
		{name: "v3 refused", top: "v3", wantErr: `top/Chart.yaml: apiVersion "v3"`},
		{name: "v3 subchart refused", top: "v2", sub: "v3", wantErr: `top/charts/sub/Chart.yaml: apiVersion "v3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "top")
			writeChart(t, dir, tt.top)
			if tt.sub != "" {
				writeChart(t, filepath.Join(dir, "charts", "sub"), tt.sub)
			}
			ch, err := Load(dir)
			if tt.wantErr == "" {
				if err != nil || ch == nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrChartAPI) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load error %v, want ErrChartAPI naming %q", err, tt.wantErr)
			}
		})
	}
}
