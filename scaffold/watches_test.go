package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/operator/watches"
)

// The tools read watches.yaml as the runtime does: every field it honours is
// accepted (dryRunOption was once refused here), and what it refuses is
// refused with its message.
func TestLoadWatchesIsTheRuntimes(t *testing.T) {
	const entry = "- group: charts.example.com\n  version: v1alpha1\n  kind: Web\n  chart: helm-charts/web\n"
	tests := []struct {
		name  string
		extra string
		want  string // error substring; empty for none
	}{
		{"every field", "  watchDependentResources: false\n  overrideValues: {image: $IMG}\n  reconcilePeriod: 1m\n  maxConcurrentReconciles: 2\n  selector: {matchLabels: {tier: web}}\n  dryRunOption: server\n", ""},
		{"bad dry run option", "  dryRunOption: sometimes\n", `dryRunOption "sometimes": must be none, client or server`},
		{"unknown field", "  chartPath: x\n", `unknown field "[0].chartPath"`},
		{"a key in another case", "  DryRunOption: server\n", `unknown field "[0].DryRunOption"`},
		{"zero concurrency", "  maxConcurrentReconciles: 0\n", "maxConcurrentReconciles 0: must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := []byte(entry + tt.extra)
			if err := os.WriteFile(filepath.Join(dir, WatchesFile), data, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadWatches(dir)
			_, rerr := watches.Decode(data, filepath.Join(dir, WatchesFile))
			if (err == nil) != (rerr == nil) {
				t.Fatalf("tools: %v; runtime: %v", err, rerr)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("LoadWatches: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), WatchesFile)):
				t.Fatalf("LoadWatches error %v, want one naming %s and saying %q", err, WatchesFile, tt.want)
			case tt.want == "" && (len(got) != 1 || got[0].DryRunOption != watches.DryRunServer):
				t.Errorf("read %+v", got)
			}
		})
	}
}
