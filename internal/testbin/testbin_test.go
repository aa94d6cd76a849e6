package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

// With $CHARTPILOT_TEST_BIN set, the binaries are taken from there and
// nothing is built.
func TestFromEnvDir(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{chartpilot, operator} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvDir, dir)
	for _, tc := range []struct {
		get  func(testing.TB) string
		want string
	}{
		{Chartpilot, filepath.Join(dir, chartpilot)},
		{Operator, filepath.Join(dir, operator)},
	} {
		if got := tc.get(t); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testbin", "testbin.go")); err != nil {
		t.Errorf("module root %s does not hold this package: %v", root, err)
	}
}
