package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnableMonitoring(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "default", "kustomization.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("resources:\n- ../rbac\n#- ../prometheus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := EnableMonitoring(dir); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "resources:\n- ../rbac\n- ../prometheus\n" {
		t.Errorf("after EnableMonitoring:\n%s", data)
	}
	// Enabled already: nothing to uncomment, and the error names the file.
	if err := EnableMonitoring(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("second EnableMonitoring = %v, want an error naming %s", err, path)
	}
}
