package release

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

// Helm 4's slog lines reach the operator's logr logger at the verbosity
// Helm 3's debug lines had (V(2)), info one step closer, warnings always,
// with their attributes and groups.
func TestHelmLogLevels(t *testing.T) {
	tests := []struct {
		level     slog.Level
		verbosity int
	}{
		{slog.LevelDebug, 2},
		{slog.LevelInfo, 1},
		{slog.LevelWarn, 0},
		{slog.LevelError, 0},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			for v := 0; v <= 3; v++ {
				var lines []string
				log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: v})
				slog.New(newLogHandler(log)).WithGroup("kube").With("release", "web").Log(t.Context(), tt.level, "applied", "kind", "ConfigMap")
				if shown := len(lines) == 1; shown != (v >= tt.verbosity) {
					t.Fatalf("at verbosity %d the line was shown: %v, want %v", v, shown, v >= tt.verbosity)
				}
				if len(lines) == 1 && !strings.Contains(lines[0], `"kube.release"="web"`) || len(lines) == 1 && !strings.Contains(lines[0], `"kube.kind"="ConfigMap"`) {
					t.Errorf("line %q lacks the attributes", lines[0])
				}
			}
		})
	}
}
