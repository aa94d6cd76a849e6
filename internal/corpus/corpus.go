package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// EnvDir overrides where the corpus is.
const EnvDir = "CHARTPILOT_CORPUS"

// Dir is the corpus directory; it skips t when there is none (fails it
// under CI=true).
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		// internal/corpus/corpus.go -> the repository -> ../shared/charts
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "charts")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the chart corpus is missing at %s (set %s): CI runs the corpus tests", dir, EnvDir)
		}
		t.Skipf("no chart corpus at %s (set %s; under CI=true this fails)", dir, EnvDir)
	}
	return dir
}

// Charts lists the corpus's chart directories (those holding a
// Chart.yaml), sorted.
func Charts(t testing.TB) []string {
	t.Helper()
	dir := Dir(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(p, "Chart.yaml")); e.IsDir() && err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the chart corpus at %s holds no chart", dir)
	}
	return out
}

// ValueSet is a set of values a chart's project tests it with.
type ValueSet struct {
	// Name is the file relative to the chart, e.g. ci/ha-values.yaml.
	Name   string
	Values map[string]any
}

// CIValues are the values files the chart ships under ci/ (*.yaml,
// *.yml), read as Helm reads a --values file, sorted by name.
func CIValues(t testing.TB, chartDir string) []ValueSet {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yaml", "*.yml"} {
		m, err := filepath.Glob(filepath.Join(chartDir, "ci", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	var out []ValueSet
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v == nil {
			v = map[string]any{}
		}
		out = append(out, ValueSet{Name: strings.TrimPrefix(f, chartDir+string(filepath.Separator)), Values: v})
	}
	return out
}

// Lost lists the paths below path where got (what an API server kept)
// differs from sent: fields pruned, values changed.
func Lost(sent, got any, path string) []string {
	if sm, ok := sent.(map[string]any); ok {
		gm, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		keys := make([]string, 0, len(sm))
		for k := range sm {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			gv, ok := gm[k]
			if !ok {
				out = append(out, path+"."+k)
				continue
			}
			out = append(out, Lost(sm[k], gv, path+"."+k)...)
		}
		return out
	}
	if sl, ok := sent.([]any); ok {
		gl, ok := got.([]any)
		if !ok || len(gl) != len(sl) {
			return []string{path}
		}
		var out []string
		for i := range sl {
			out = append(out, Lost(sl[i], gl[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	a, _ := json.Marshal(sent)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		return []string{path}
	}
	return nil
}
