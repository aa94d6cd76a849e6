// Package corpus finds the corpus of real-world Helm charts chartpilot is
// tested on: the charts under shared/charts beside the repository, each with
// the values sets its project tests with (its ci/ values files).
package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotFound means no corpus sits beside the repository.
var ErrNotFound = errors.New("no chart corpus beside the repository")

// Chart is one chart of the corpus.
type Chart struct {
	// Name is the chart's folder name, e.g. "bitnami-redis".
	Name string
	// Dir is the chart's directory.
	Dir string
	// ValuesFiles are the chart's ci/*.yaml (and .yml) files, sorted.
	ValuesFiles []string
}

// ValuesSets names the values sets of the chart: "defaults", then each
// ci file's base name.
func (c Chart) ValuesSets() []string {
	out := []string{"defaults"}
	for _, f := range c.ValuesFiles {
		out = append(out, filepath.Base(f))
	}
	return out
}

// Find returns the corpus directory: shared/charts in a parent of dir (the
// repository's parent, where CI lays shared/ beside the clone).
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "shared", "charts")
		if fi, err := os.Stat(candidate); err == nil && fi.IsDir() {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w: no shared/charts in %s or a parent", ErrNotFound, abs)
		}
	}
}

// Load lists the charts of the corpus in dir, sorted by name: every folder
// with a Chart.yaml.
func Load(dir string) ([]Chart, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the chart corpus: %w", err)
	}
	var out []Chart
	for _, e := range entries {
		chartDir := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(chartDir, "Chart.yaml")); err != nil {
			continue
		}
		files, err := valuesFiles(filepath.Join(chartDir, "ci"))
		if err != nil {
			return nil, err
		}
		out = append(out, Chart{Name: e.Name(), Dir: chartDir, ValuesFiles: files})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no chart in %s", ErrNotFound, dir)
	}
	return out, nil
}

func valuesFiles(ci string) ([]string, error) {
	entries, err := os.ReadDir(ci)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ci, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			out = append(out, filepath.Join(ci, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}
