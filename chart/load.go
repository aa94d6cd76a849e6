package chart

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/chartpilot/chartpilot/operator/chartload"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// ErrUnresolvedDependency is returned when a dependency listed in Chart.yaml is
// neither vendored under charts/ nor a local file:// chart that can be loaded.
var ErrUnresolvedDependency = errors.New("unresolved chart dependency")

// ErrLibraryChart is returned when the chart is a library chart (type:
// library in Chart.yaml): Helm installs only application charts.
var ErrLibraryChart = errors.New("a library chart cannot be installed")

// Chart is a loaded Helm chart and where it came from.
type Chart struct {
	// Path is the directory or .tgz the chart was loaded from.
	Path string
	// Helm is the loaded chart with its dependencies attached.
	Helm *helmchart.Chart
	// Values are values given for the chart besides its values.yaml (what
	// `chartpilot init --values/--set` records): every render merges them
	// under its own values, as `helm install -f` merges a values file
	// under the files after it. Nil means none.
	Values map[string]any
}

// Name is the chart's name from Chart.yaml.
func (c *Chart) Name() string { return c.Helm.Name() }

// Load loads the chart at path (a chart directory or a packaged .tgz) and
// attaches every dependency of Chart.yaml that is not vendored under charts/
// but points at a local chart (repository file://...), recursively, checking
// the version constraint. A dependency that is neither is an error wrapping
// ErrUnresolvedDependency. A library chart, which Helm refuses to install,
// is an error wrapping ErrLibraryChart (as a dependency it is fine).
func Load(path string) (*Chart, error) {
	ch, err := load(path, nil)
	if err != nil {
		return nil, err
	}
	if err := checkInstallable(path, ch); err != nil {
		return nil, err
	}
	return &Chart{Path: path, Helm: ch}, nil
}

// checkInstallable refuses a chart Helm does not install: its Chart.yaml's
// type must be empty or "application".
func checkInstallable(path string, ch *helmchart.Chart) error {
	switch ch.Metadata.Type {
	case "", "application":
		return nil
	}
	file := filepath.Join(path, chartutil.ChartfileName)
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		file = path + " (" + chartutil.ChartfileName + ")"
	}
	return fmt.Errorf("%s: type is %q: %w: Helm installs only application charts (type: application, or no type), and a library chart only lends templates to the charts that depend on it; make an application chart that depends on %s and use that", file, ch.Metadata.Type, ErrLibraryChart, ch.Name())
}

// reload loads the chart again from its source, for a render of its own.
func (c *Chart) reload() (*helmchart.Chart, error) {
	return load(c.Path, nil)
}

// load loads path and resolves its local dependencies; seen holds the
// directories on the way here, to refuse dependency cycles.
func load(path string, seen []string) (*helmchart.Chart, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	for _, s := range seen {
		if s == abs {
			return nil, fmt.Errorf("loading chart %s: dependency cycle through %s", seen[0], abs)
		}
	}
	ch, err := chartload.Load(abs)
	if err != nil {
		if p, ok := findPlaceholder(path); ok {
			return nil, fmt.Errorf("loading chart %s: %w", path, p)
		}
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	if err := resolveLocal(ch, abs, fi.IsDir(), append(seen, abs)); err != nil {
		return nil, err
	}
	return ch, nil
}

// resolveLocal attaches the file:// dependencies of ch (loaded from dir)
// that charts/ does not already hold.
func resolveLocal(ch *helmchart.Chart, dir string, isDir bool, seen []string) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	for _, dep := range ch.Metadata.Dependencies {
		if have[dep.Name] {
			continue
		}
		where := fmt.Sprintf("%s: dependency %q", filepath.Join(dir, chartutil.ChartfileName), dep.Name)
		if !strings.HasPrefix(dep.Repository, "file://") {
			return fmt.Errorf("%s (repository %q) is not vendored under charts/: %w (run `helm dependency build` first, or use a file:// repository)", where, dep.Repository, ErrUnresolvedDependency)
		}
		if !isDir {
			return fmt.Errorf("%s: a packaged chart must vendor its file:// dependencies under charts/: %w", where, ErrUnresolvedDependency)
		}
		local := strings.TrimPrefix(dep.Repository, "file://")
		if !filepath.IsAbs(local) {
			local = filepath.Join(dir, local)
		}
		sub, err := load(local, seen)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", where, ErrUnresolvedDependency, err)
		}
		if sub.Name() != dep.Name {
			return fmt.Errorf("%s: %s holds chart %q: %w", where, local, sub.Name(), ErrUnresolvedDependency)
		}
		if dep.Version != "" {
			constraint, err := semver.NewConstraint(dep.Version)
			if err != nil {
				return fmt.Errorf("%s: version constraint %q: %w", where, dep.Version, err)
			}
			v, err := semver.NewVersion(sub.Metadata.Version)
			if err != nil {
				return fmt.Errorf("%s: version %q of %s: %w", where, sub.Metadata.Version, local, err)
			}
			if !constraint.Check(v) {
				return fmt.Errorf("%s: %s has version %s, which does not satisfy %q: %w", where, local, v, dep.Version, ErrUnresolvedDependency)
			}
		}
		ch.AddDependency(sub)
	}
	return nil
}

// Vendor writes the chart with its dependencies packaged under charts/ into
// dir/<chart name>, the layout `helm dependency build` leaves, and returns
// that directory. dir must exist.
func (c *Chart) Vendor(dir string) (string, error) {
	if err := chartutil.SaveDir(c.Helm, dir); err != nil {
		return "", fmt.Errorf("vendoring chart %s into %s: %w", c.Name(), dir, err)
	}
	return filepath.Join(dir, c.Name()), nil
}

// Subchart is a dependency of a chart as its values see it.
type Subchart struct {
	// Key is where the subchart's values sit in the parent's: its alias, or
	// its name.
	Key string
	// Condition is the dependency's condition: comma-separated value paths.
	Condition string
	Chart     *helmchart.Chart
}

// Subcharts lists the dependencies of ch declared in Chart.yaml that are
// present (vendored or resolved), in declaration order.
func Subcharts(ch *helmchart.Chart) []Subchart {
	byName := map[string]*helmchart.Chart{}
	for _, d := range ch.Dependencies() {
		byName[d.Name()] = d
	}
	var out []Subchart
	for _, dep := range ch.Metadata.Dependencies {
		sub, ok := byName[dep.Name]
		if !ok {
			continue
		}
		key := dep.Name
		if dep.Alias != "" {
			key = dep.Alias
		}
		out = append(out, Subchart{Key: key, Condition: dep.Condition, Chart: sub})
	}
	return out
}
