package watches

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/chartpilot/chartpilot/internal/strictyaml"
	"github.com/chartpilot/chartpilot/operator/chartload"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// DryRun says how a changed release is tried before it is applied.
type DryRun string

const (
	// DryRunNone applies changes without trying them first.
	DryRunNone DryRun = "none"
	// DryRunClient renders the chart first: a template error fails before
	// the release is touched. The default.
	DryRunClient DryRun = "client"
	// DryRunServer also sends the rendered objects to the API server as a
	// server-side dry run, so admission and validation errors fail before the
	// release is touched.
	DryRunServer DryRun = "server"
)

// Watch is one entry of watches.yaml.
type Watch struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Chart is the chart directory or .tgz: relative to the watches file's
	// directory, or else (as operator-sdk resolves it) to the working directory.
	Chart string `json:"chart"`
	// WatchDependentResources makes changes to the release's objects trigger
	// reconciles (drift repair). Defaults to true.
	WatchDependentResources *bool `json:"watchDependentResources,omitempty"`
	// OverrideValues are set over the CR's values, as `helm --set key=value`;
	// $VAR and ${VAR} expand from the environment.
	OverrideValues map[string]string `json:"overrideValues,omitempty"`
	// ReconcilePeriod re-checks each CR at least this often; 0 disables.
	ReconcilePeriod *metav1.Duration `json:"reconcilePeriod,omitempty"`
	// MaxConcurrentReconciles bounds the CRs of this kind reconciled at once.
	MaxConcurrentReconciles *int `json:"maxConcurrentReconciles,omitempty"`
	// Selector limits the CRs reconciled to those whose labels match.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// DryRunOption is none, client (default) or server.
	DryRunOption DryRun `json:"dryRunOption,omitempty"`
	// ServerSideApply installs new releases with server-side apply (Helm 4's
	// default) instead of Helm's three-way merge patch; a release keeps the
	// method it was installed with. Default false: see
	// docs/design/server-side-apply.md.
	ServerSideApply bool `json:"serverSideApply,omitempty"`
	// HealthDeadline is how long a new revision of a release has to become
	// healthy: one whose objects regress before (CrashLoopBackOff,
	// ProgressDeadlineExceeded) or are not healthy by then is rolled back to
	// the last revision recorded healthy. Default DefaultHealthDeadline;
	// 0s turns the health gate off.
	HealthDeadline *metav1.Duration `json:"healthDeadline,omitempty"`
	// BackupHooks grants the operator pods/exec to run Velero's backup
	// hook annotations that custom resources add through values the
	// chart passes on to its pods (podAnnotations): chartpilot grants it
	// without this only when the chart's templates or values carry a hook
	// annotation. Read by `chartpilot generate`, not the runtime.
	BackupHooks bool `json:"backupHooks,omitempty"`

	// LoadedChart is the chart, loaded by Load.
	LoadedChart *chart.Chart `json:"-"`
	// LabelSelector is Selector converted, Everything when unset.
	LabelSelector labels.Selector `json:"-"`
	// ChartPath is Chart resolved against the watches file's directory.
	ChartPath string `json:"-"`
}

// GroupVersionKind of the watched custom resource.
func (w Watch) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: w.Group, Version: w.Version, Kind: w.Kind}
}

// WatchesDependents reports whether dependent resources are watched.
func (w Watch) WatchesDependents() bool {
	return w.WatchDependentResources == nil || *w.WatchDependentResources
}

// DefaultHealthDeadline is the health deadline of a watch that sets none:
// as long as Helm's default wait, and longer than a Deployment's rollout
// of a few pods takes.
const DefaultHealthDeadline = 5 * time.Minute

// Deadline is the health deadline of the watch's releases; 0 when the
// health gate is off.
func (w Watch) Deadline() time.Duration {
	if w.HealthDeadline == nil {
		return DefaultHealthDeadline
	}
	return w.HealthDeadline.Duration
}

// Period is the reconcile period; 0 when none is set.
func (w Watch) Period() time.Duration {
	if w.ReconcilePeriod == nil {
		return 0
	}
	return w.ReconcilePeriod.Duration
}

// Options configure Load.
type Options struct {
	// Getenv expands $VAR in overrideValues. Defaults to os.Getenv.
	Getenv func(string) string
}

// Load reads and checks a watches file and loads each entry's chart. An error
// names the file and the entry (by index and GVK) at fault.
func Load(path string, opts Options) ([]Watch, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading watches file: %w", err)
	}
	return Parse(data, filepath.Dir(path), path, opts)
}

// Parse checks watches.yaml content and completes each entry for the
// runtime: defaults, the label selector, $VAR expansion and the chart, loaded.
// Charts resolve against baseDir and messages name source.
func Parse(data []byte, baseDir, source string, opts Options) ([]Watch, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	return parse(data, source, func(w *Watch) error { return w.complete(baseDir, opts) })
}

// Decode reads watches.yaml content strictly and checks every entry's fields,
// without loading charts, expanding the environment or filling defaults: what
// the tools that read or write the file (scaffolding, bundles) need. What
// Decode accepts, the runtime accepts, given charts that load.
func Decode(data []byte, source string) ([]Watch, error) {
	return parse(data, source, nil)
}

// parse decodes the entries, checks each and, when complete is set,
// completes each that passed.
func parse(data []byte, source string, complete func(*Watch) error) ([]Watch, error) {
	var watches []Watch
	if err := strictyaml.Unmarshal(data, &watches); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(bytes.TrimSpace(data)) == 0 || len(watches) == 0 {
		return nil, fmt.Errorf("%s: no entries", source)
	}
	seen := map[schema.GroupVersionKind]int{}
	err := eachEntry(watches, source, func(i int, w *Watch) error {
		if err := w.check(); err != nil {
			return err
		}
		if first, dup := seen[w.GroupVersionKind()]; dup {
			return fmt.Errorf("duplicate of entry %d: each group/version/kind may be watched once", first)
		}
		seen[w.GroupVersionKind()] = i + 1
		if complete != nil {
			return complete(w)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return watches, nil
}

// eachEntry runs f on every entry and joins the errors, each naming the file
// and the entry by index and GVK.
func eachEntry(watches []Watch, source string, f func(int, *Watch) error) error {
	var errs []error
	for i := range watches {
		if err := f(i, &watches[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: entry %d (%s): %w", source, i+1, describe(watches[i]), err))
		}
	}
	return errors.Join(errs...)
}

func describe(w Watch) string {
	gvk := w.GroupVersionKind()
	if gvk.Empty() {
		return "no group/version/kind"
	}
	return gvk.String()
}

// check checks the fields of an entry as written.
func (w *Watch) check() error {
	switch {
	case w.Version == "":
		return errors.New("version is required")
	case w.Kind == "":
		return errors.New("kind is required")
	case w.Chart == "":
		return errors.New("chart is required")
	}
	switch w.DryRunOption {
	case "", DryRunNone, DryRunClient, DryRunServer:
	default:
		return fmt.Errorf("dryRunOption %q: must be none, client or server", w.DryRunOption)
	}
	if w.MaxConcurrentReconciles != nil && *w.MaxConcurrentReconciles < 1 {
		return fmt.Errorf("maxConcurrentReconciles %d: must be at least 1", *w.MaxConcurrentReconciles)
	}
	if w.ReconcilePeriod != nil && w.ReconcilePeriod.Duration < 0 {
		return fmt.Errorf("reconcilePeriod %s: must not be negative", w.ReconcilePeriod.Duration)
	}
	if w.HealthDeadline != nil && w.HealthDeadline.Duration < 0 {
		return fmt.Errorf("healthDeadline %s: must not be negative", w.HealthDeadline.Duration)
	}
	if w.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(w.Selector); err != nil {
			return fmt.Errorf("selector: %w", err)
		}
	}
	for k := range w.OverrideValues {
		if strings.TrimSpace(k) == "" {
			return errors.New("overrideValues: empty key")
		}
	}
	return nil
}

// complete fills what the runtime needs of a checked entry.
func (w *Watch) complete(baseDir string, opts Options) error {
	if w.DryRunOption == "" {
		w.DryRunOption = DryRunClient
	}
	w.LabelSelector = labels.Everything()
	if w.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(w.Selector)
		if err != nil {
			return fmt.Errorf("selector: %w", err)
		}
		w.LabelSelector = sel
	}
	for k, v := range w.OverrideValues {
		w.OverrideValues[k] = os.Expand(v, opts.Getenv)
	}
	w.ChartPath = resolveChart(w.Chart, baseDir)
	ch, err := chartload.Load(w.ChartPath)
	if err != nil {
		return fmt.Errorf("chart %s: %w", w.Chart, err)
	}
	w.LoadedChart = ch
	return nil
}

func resolveChart(chart, baseDir string) string {
	if filepath.IsAbs(chart) {
		return chart
	}
	if p := filepath.Join(baseDir, chart); exists(p) {
		return p
	}
	if exists(chart) {
		return chart
	}
	return filepath.Join(baseDir, chart)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
