package charttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
)

// Write writes files (path within the chart -> content) into a new
// directory and returns it.
func Write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Load writes files as Write does and loads the chart.
func Load(t testing.TB, files map[string]string) *chart.Chart {
	t.Helper()
	c, err := chart.Load(Write(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
