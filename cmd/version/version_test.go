package version

import (
	"path/filepath"
	"runtime"
	"testing"
)

func TestBuilderName(t *testing.T) {
	tests := []struct{ version, want string }{
		{"v0.3.1", "chartpilot-v0.3.1"},
		{"v1.0.0-rc.1", "chartpilot-v1.0.0-rc.1"},
		{"(devel)", "chartpilot-devel"},
		{"", "chartpilot-devel"},
		// What the go command stamps from the VCS: the commit, or a dirty tree.
		{"v0.0.0-20261203091500-c15abb1d0e2f", "chartpilot-devel"},
		{"v0.3.2-0.20261203091500-c15abb1d0e2f", "chartpilot-devel"},
		{"v0.3.1+dirty", "chartpilot-devel"},
		{"v0.0.0-20261203091500-c15abb1d0e2f+dirty", "chartpilot-devel"},
	}
	for _, tt := range tests {
		if got := builderName(tt.version); got != tt.want {
			t.Errorf("builderName(%q) = %q, want %q", tt.version, got, tt.want)
		}
	}
}

// A test binary built without -trimpath knows its source tree.
func TestSourceDir(t *testing.T) {
	if _, file, _, _ := runtime.Caller(0); !filepath.IsAbs(file) {
		t.Skip("built with -trimpath")
	}
	want, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got := SourceDir(); got != want {
		t.Errorf("SourceDir() = %q, want %q", got, want)
	}
}
