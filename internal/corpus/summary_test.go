package corpus_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// summarize logs the corpus table, holds the values sets to the goal, and
// with -update writes the table to docs/corpus.md.
func summarize(t *testing.T, rows []*result) {
	t.Helper()
	var b strings.Builder
	b.WriteString("| chart | init | warnings | bundle | scorecard | values sets passed | refused or pruned | kinds not served by the test API server |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	sets, passed := 0, 0
	for _, r := range rows {
		ok := 0
		var why, unchecked []string
		for _, v := range r.valuesSets {
			sets++
			if v.passed() {
				ok++
				passed++
			} else {
				why = append(why, v.name+": "+cut(firstOf(v.cr, v.refused), 160)+knownText(v.known))
			}
			for _, k := range v.unchecked {
				if !slices.Contains(unchecked, k) {
					unchecked = append(unchecked, k)
				}
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %d/%d | %s | %s |\n", r.chart, status(r.init, r.initTime.Round(100*1e6).String()), r.warnings,
			after(r.init, status(r.bundle, "ok")), after(r.init+r.bundle, status(r.scorecard, "ok")), ok, len(r.valuesSets), cell(why), strings.Join(unchecked, ", "))
	}
	rate := 0.0
	if sets > 0 {
		rate = float64(passed) / float64(sets)
	}
	fmt.Fprintf(&b, "\n%d of %d values sets passed (%.1f%%).\n", passed, sets, 100*rate)
	t.Logf("corpus:\n%s", b.String())
	if rate < valuesSetGoal {
		t.Errorf("%.1f%% of the values sets passed; the goal is %.0f%%", 100*rate, 100*valuesSetGoal)
	}
	if *update {
		doc := filepath.Join("..", "..", "docs", "corpus.md")
		head := "# The chart corpus\n\n`go test ./internal/corpus` (part of `make test`) takes each chart of `../shared/charts` (21\nreal-world charts, SOURCES.md there) through what a user does: `chartpilot init`, `make bundle`\n(validated) and the static scorecard; then each values set the chart ships (its `ci/` files and its\ndefaults) as the spec of a custom resource on a real API server (accepted, nothing pruned), and the\nchart rendered from it created object by object as the operator's ServiceAccount, with the RBAC OLM\ngrants from the CSV, in every install mode the CSV supports (OwnNamespace, SingleNamespace and\nAllNamespaces). The test fails on any failure not listed as known in it, and below 95% of the\nvalues sets. `go test ./internal/corpus -update` rewrites this table; this one is from " +
			time.Now().UTC().Format(time.DateOnly) + fmt.Sprintf(", on a %d-core %s/%s machine", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH) +
			" (init times include the process start).\n\n"
		if err := os.WriteFile(doc, []byte(head+b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func status(failed, ok string) string {
	if failed != "" {
		return "FAIL: " + cell([]string{failed})
	}
	return ok
}

// knownText says why a known failure fails.
func knownText(known string) string {
	if known == "" {
		return ""
	}
	return " (known: " + known + ")"
}

// cut shortens s to n bytes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// after is s, or a dash when the step before failed.
func after(failed, s string) string {
	if failed != "" {
		return "—"
	}
	return s
}

func firstOf(cr string, refused []string) string {
	if cr != "" {
		return cr
	}
	if len(refused) > 1 {
		return fmt.Sprintf("%s (and %d more)", refused[0], len(refused)-1)
	}
	return refused[0]
}

// cell makes text fit a table cell.
func cell(parts []string) string {
	s := strings.Join(parts, "; ")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
	return cut(s, 900)
}
