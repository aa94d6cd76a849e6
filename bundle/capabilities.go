package bundle

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/scaffold"
)

// Level is an operator capability level, from Basic Install (1) to Auto
// Pilot (5).
type Level int

// The capability levels of the Operator Capability Model.
const (
	LevelBasicInstall Level = iota + 1
	LevelSeamlessUpgrades
	LevelFullLifecycle
	LevelDeepInsights
	LevelAutoPilot
)

var levelNames = []string{"", "Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}

func (l Level) String() string {
	if l < LevelBasicInstall || l > LevelAutoPilot {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// MarshalText writes the level's name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// ParseLevel reads a level's name as the capabilities annotation holds it.
func ParseLevel(s string) (Level, bool) {
	for l := LevelBasicInstall; l <= LevelAutoPilot; l++ {
		if strings.EqualFold(strings.TrimSpace(s), levelNames[l]) {
			return l, true
		}
	}
	return 0, false
}

// TestState is a scorecard test's outcome, "" when it did not run.
type TestState string

// Evidence is what the capability level is computed from.
type Evidence struct {
	// Deployments is the number of operator deployments the CSV installs.
	Deployments int
	// OwnedAPIs are the owned CRD kinds; Samples the kinds with a sample.
	OwnedAPIs, Samples []string
	// DriftRepairDisabled lists the kinds whose watch turns
	// watchDependentResources off: the runtime does not see their objects
	// change and so does not repair drift.
	DriftRepairDisabled []string
	// Replaces and SkipRange are the bundle's declared upgrade path.
	Replaces, SkipRange string
	// MetricsService, ServiceMonitor and PrometheusRule say what the bundle
	// ships for monitoring.
	MetricsService, ServiceMonitor, PrometheusRule bool
	// Scorecard maps a test name to its state; nil when no results were given.
	Scorecard map[string]TestState
	// ScorecardFile is where the results came from.
	ScorecardFile string
}

// Criterion is one condition of a level.
type Criterion struct {
	Name string `json:"name"`
	Met  bool   `json:"met"`
	// Why says what the evidence is, or what is missing.
	Why string `json:"why"`
}

// LevelResult is one level's criteria.
type LevelResult struct {
	Level    Level       `json:"level"`
	Met      bool        `json:"met"`
	Criteria []Criterion `json:"criteria"`
}

// Assessment is the computed capability level and the reasons.
type Assessment struct {
	// Level is the highest level whose criteria, and those of every level
	// below, are all met; Basic Install is the floor a CSV must declare.
	Level Level `json:"level"`
	// Met says whether the evidence proves Level. It is false only when
	// Basic Install's criteria are not all met: Level is then the floor
	// the CSV declares, not a level proven.
	Met    bool          `json:"met"`
	Levels []LevelResult `json:"levels"`
}

// Proven names the level the evidence proves: Level, or "none" when not
// even Basic Install is met.
func (a *Assessment) Proven() string {
	if !a.Met {
		return "none"
	}
	return a.Level.String()
}

// nextUnmet is the lowest level not met: the one to name what is missing.
func (a *Assessment) nextUnmet() Level {
	if !a.Met {
		return a.Level
	}
	return a.Level + 1
}

// unmetSummary names the unmet criteria of level l.
func (a *Assessment) unmetSummary(l Level) string {
	var names []string
	for _, lr := range a.Levels {
		if lr.Level != l {
			continue
		}
		for _, c := range lr.Criteria {
			if !c.Met {
				names = append(names, c.Name)
			}
		}
	}
	return l.String() + " lacks: " + strings.Join(names, ", ")
}

// Assess computes the capability level from the evidence. The criteria are
// documented in docs/capabilities.md; a level counts only when it and
// every level below it are fully met.
func Assess(ev Evidence) *Assessment {
	test := func(name, what string) Criterion {
		c := Criterion{Name: what + " (scorecard " + name + ")"}
		switch st := ev.Scorecard[name]; {
		case ev.Scorecard == nil:
			c.Why = "not proven: no scorecard results given (--scorecard-results)"
		case st == "":
			c.Why = "not proven: the scorecard results " + ev.ScorecardFile + " have no " + name + " test"
		case st == TestState(v1alpha3.PassState):
			c.Met, c.Why = true, name+" passed"
		default:
			c.Why = "not proven: " + name + " ended in state " + string(st)
		}
		return c
	}
	// backupRestore is met when a CR's volumes came back through a backup
	// and a restore after the CR was deleted, and deleting a CR is proven
	// to remove its release: a restore into a clean namespace.
	backupRestore := func(backup, uninstall Criterion) Criterion {
		c := Criterion{Name: "backup and restore", Met: backup.Met && uninstall.Met}
		switch {
		case c.Met:
			c.Why = "the runtime backs up and restores each CR with its release's values, Secrets, ConfigMaps and volumes (<Kind>Backup, <Kind>Restore): " + scorecardtests.ChartpilotBackupRestore + " and " + scorecardtests.ChartpilotUninstall + " passed"
		case !backup.Met:
			c.Why = backup.Why
		default:
			c.Why = uninstall.Why
		}
		return c
	}
	var unsampled []string
	for _, k := range ev.OwnedAPIs {
		if !contains(ev.Samples, k) {
			unsampled = append(unsampled, k)
		}
	}
	levels := []LevelResult{{
		Level: LevelBasicInstall,
		Criteria: []Criterion{
			{Name: "operator deployment", Met: ev.Deployments > 0, Why: fmt.Sprintf("the CSV installs %d deployment(s) running the chartpilot runtime", ev.Deployments)},
			{Name: "owned APIs", Met: len(ev.OwnedAPIs) > 0, Why: "owned CRDs: " + orNone(ev.OwnedAPIs)},
			{Name: "a sample per owned API", Met: len(ev.OwnedAPIs) > 0 && len(unsampled) == 0, Why: ternary(len(unsampled) == 0, "alm-examples has a sample of every owned kind", "no sample (config/samples) of: "+strings.Join(unsampled, ", "))},
			{Name: "install and status", Met: true, Why: "the runtime installs the chart for each CR and reports Deployed, ReleaseFailed and Ready (kstatus of the release's objects) conditions"},
			test(scorecardtests.ChartpilotInstall, "a CR installs the operand"),
			test(scorecardtests.ChartpilotRBAC, "the generated RBAC suffices"),
		},
	}, {
		Level: LevelSeamlessUpgrades,
		Criteria: []Criterion{
			{Name: "operand upgrades", Met: true, Why: "the runtime upgrades the release when the chart or the CR's values change and rolls a failed upgrade back to the last deployed revision"},
			{Name: "operator upgrade path", Met: ev.Replaces != "" || ev.SkipRange != "", Why: ternary(ev.Replaces != "" || ev.SkipRange != "",
				"the CSV upgrades from "+strings.TrimSpace(ev.Replaces+" "+ev.SkipRange),
				"the CSV replaces nothing and has no skipRange (a first release, or no --from-catalog/--replaces): OLM has nothing to upgrade from")},
			test(scorecardtests.ChartpilotUpgrade, "an operand survives an operator upgrade"),
		},
	}, {
		Level: LevelFullLifecycle,
		Criteria: []Criterion{
			{Name: "failure recovery", Met: true, Why: "the runtime uninstalls failed installs and retries, rolls back failed upgrades, and unlocks releases stuck in pending-* after a crash"},
			test(scorecardtests.ChartpilotUninstall, "deleting a CR removes what its release created"),
			backupRestore(test(scorecardtests.ChartpilotBackupRestore, "backup"), test(scorecardtests.ChartpilotUninstall, "uninstall")),
		},
	}, {
		Level: LevelDeepInsights,
		Criteria: []Criterion{
			{Name: "operator metrics", Met: ev.MetricsService, Why: ternary(ev.MetricsService,
				"the bundle ships a metrics Service for the runtime's metrics per release (chartpilot_release_*: reconciles, Helm actions, revision, ready/drifted/failed, objects not healthy...)",
				"the bundle ships no metrics Service (config/default/metrics_service.yaml)")},
			{Name: "monitoring", Met: ev.ServiceMonitor, Why: ternary(ev.ServiceMonitor, "the bundle ships a ServiceMonitor",
				"the bundle ships no ServiceMonitor (enable ../prometheus in config/default/kustomization.yaml)")},
			{Name: "alerts", Met: ev.PrometheusRule, Why: ternary(ev.PrometheusRule, "the bundle ships a PrometheusRule",
				"the bundle ships no PrometheusRule alerting on failed releases (config/prometheus/alerts.yaml)")},
			test(scorecardtests.ChartpilotInsights, "the operator reports the operand's health: its metrics, status health and events, and alerts Prometheus loads"),
		},
	}, {
		Level: LevelAutoPilot,
		Criteria: []Criterion{
			{Name: "drift repair", Met: len(ev.DriftRepairDisabled) == 0, Why: ternary(len(ev.DriftRepairDisabled) == 0,
				"the runtime restores objects of the release that are deleted or edited",
				"watchDependentResources is off for "+strings.Join(ev.DriftRepairDisabled, ", ")+": drift is not seen")},
			test(scorecardtests.ChartpilotAutorollback, "auto rollback proven: an upgrade that breaks the operand is rolled back to the last healthy revision within its health deadline, the reason in status"),
			test(scorecardtests.ChartpilotAutoscale, "auto-scaling: an HPA per Deployment and StatefulSet as the CR asks, its replica count kept through upgrades"),
		},
	}}
	a := &Assessment{Level: LevelBasicInstall}
	reached := true
	for i := range levels {
		met := true
		for _, c := range levels[i].Criteria {
			met = met && c.Met
		}
		levels[i].Met = met
		if reached && met {
			a.Level, a.Met = levels[i].Level, true
		}
		reached = reached && met
	}
	a.Levels = levels
	return a
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func ternary(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// ReadScorecardResults reads a scorecard results file (a v1alpha3 TestList
// in JSON, as `scorecard -o json` writes) into test states. A test is named
// by its result's name, else its "test" label; it passed when every one of
// its results passed.
func ReadScorecardResults(file string) (map[string]TestState, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("scorecard results: %w", err)
	}
	var list v1alpha3.TestList
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("scorecard results %s: not a v1alpha3 TestList: %w", file, err)
	}
	if list.Kind != "" && list.Kind != "TestList" {
		return nil, fmt.Errorf("scorecard results %s: kind %q, want TestList", file, list.Kind)
	}
	states := map[string]TestState{}
	set := func(name string, st v1alpha3.State) {
		if name == "" {
			return
		}
		if prev, ok := states[name]; ok && prev != TestState(v1alpha3.PassState) {
			return // a failure sticks
		}
		states[name] = TestState(st)
	}
	for _, t := range list.Items {
		for _, r := range t.Status.Results {
			set(r.Name, r.State)
			if r.Name == "" || r.Name != t.Spec.Labels["test"] {
				set(t.Spec.Labels["test"], r.State)
			}
		}
	}
	return states, nil
}

// evidence gathers what the generated bundle and the project show.
func (g *generation) evidence(csv *v1alpha1.ClusterServiceVersion, metricsService, serviceMonitor, prometheusRule bool) (Evidence, error) {
	return collectEvidence(g.opts.Dir, g.opts.ScorecardResults, csv, metricsService, serviceMonitor, prometheusRule)
}

// collectEvidence gathers the evidence of a CSV, the project's watches and
// a scorecard results file.
func collectEvidence(projectDir, scorecardResults string, csv *v1alpha1.ClusterServiceVersion, metricsService, serviceMonitor, prometheusRule bool) (Evidence, error) {
	ev := Evidence{
		Deployments:    len(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs),
		Replaces:       csv.Spec.Replaces,
		SkipRange:      csv.Annotations[AnnotationSkipRange],
		MetricsService: metricsService, ServiceMonitor: serviceMonitor, PrometheusRule: prometheusRule,
	}
	seen := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if !seen[d.Kind] {
			seen[d.Kind] = true
			ev.OwnedAPIs = append(ev.OwnedAPIs, d.Kind)
		}
	}
	var examples []struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(csv.Annotations[AnnotationALMExamples]), &examples); err != nil {
		return ev, fmt.Errorf("alm-examples: %w", err)
	}
	for _, e := range examples {
		if !contains(ev.Samples, e.Kind) {
			ev.Samples = append(ev.Samples, e.Kind)
		}
	}
	if ws, err := scaffold.LoadWatches(projectDir); err == nil {
		for _, w := range ws {
			if w.WatchDependentResources != nil && !*w.WatchDependentResources {
				ev.DriftRepairDisabled = append(ev.DriftRepairDisabled, w.Kind)
			}
		}
	}
	if scorecardResults != "" {
		st, err := ReadScorecardResults(scorecardResults)
		if err != nil {
			return ev, err
		}
		ev.Scorecard, ev.ScorecardFile = st, scorecardResults
	}
	return ev, nil
}

// CapabilitiesOptions configure AssessProject.
type CapabilitiesOptions struct {
	// Dir is the project directory (default ".").
	Dir string
	// BundleDir is the generated bundle, relative to Dir unless absolute
	// (default "bundle").
	BundleDir string
	// ScorecardResults is a scorecard results file (v1alpha3 TestList JSON).
	ScorecardResults string
}

// AssessProject computes the capability level of a project's generated
// bundle: its CSV and extra manifests, the project's watches, and the
// scorecard results.
func AssessProject(opts CapabilitiesOptions) (*Assessment, error) {
	dir := cmp.Or(opts.Dir, ".")
	bundleDir := cmp.Or(opts.BundleDir, DefaultOutputDir)
	if !filepath.IsAbs(bundleDir) {
		bundleDir = filepath.Join(dir, bundleDir)
	}
	entries, err := os.ReadDir(filepath.Join(bundleDir, registryv1.ManifestsDir))
	if err != nil {
		return nil, fmt.Errorf("bundle capabilities: %w (run `chartpilot bundle generate` first)", err)
	}
	var csv *v1alpha1.ClusterServiceVersion
	var metricsService, serviceMonitor, prometheusRule bool
	for _, e := range entries {
		p := filepath.Join(bundleDir, registryv1.ManifestsDir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var o unstructured.Unstructured
		if err := yaml.Unmarshal(data, &o.Object); err != nil {
			return nil, fmt.Errorf("bundle capabilities: %s: %w", p, err)
		}
		switch o.GetKind() {
		case kindCSV:
			csv = &v1alpha1.ClusterServiceVersion{}
			if err := yaml.Unmarshal(data, csv); err != nil {
				return nil, fmt.Errorf("bundle capabilities: %s: %w", p, err)
			}
		case kindService:
			metricsService = metricsService || strings.Contains(o.GetName(), "metrics")
		case kindServiceMonitor:
			serviceMonitor = true
		case kindPrometheusRule:
			prometheusRule = true
		}
	}
	if csv == nil {
		return nil, fmt.Errorf("bundle capabilities: %s holds no ClusterServiceVersion (run `chartpilot bundle generate` first)", filepath.Join(bundleDir, registryv1.ManifestsDir))
	}
	ev, err := collectEvidence(dir, opts.ScorecardResults, csv, metricsService, serviceMonitor, prometheusRule)
	if err != nil {
		return nil, fmt.Errorf("bundle capabilities: %w", err)
	}
	return Assess(ev), nil
}

// WriteText prints each level with its criteria, met or not, and why.
func (a *Assessment) WriteText(w io.Writer) error {
	if a.Met {
		fmt.Fprintf(w, "capability level: %s\n", a.Level)
	} else {
		fmt.Fprintf(w, "capability level: none proven; the CSV declares %s, the floor every CSV declares (%s)\n", a.Level, a.unmetSummary(a.Level))
	}
	for _, lr := range a.Levels {
		mark := "unmet"
		if lr.Met {
			mark = "met"
		}
		fmt.Fprintf(w, "\n%d %s: %s\n", int(lr.Level), lr.Level, mark)
		for _, c := range lr.Criteria {
			box := "[ ]"
			if c.Met {
				box = "[x]"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", box, c.Name, c.Why)
		}
	}
	return nil
}

// capabilities computes the capability level from the evidence; a higher
// level the base CSV declares is refused unless forced.
func (g *generation) capabilities(csv *v1alpha1.ClusterServiceVersion, mon monitoring) error {
	ev, err := g.evidence(csv, mon.metricsService, mon.serviceMonitor, mon.prometheusRule)
	if err != nil {
		return err
	}
	a := Assess(ev)
	g.res.Assessment = a
	level := a.Level
	if declared, ok := ParseLevel(csv.Annotations[AnnotationCapabilities]); ok && declared > a.Level {
		if !g.opts.ForceCapabilities {
			return fmt.Errorf("%w: the base CSV declares %q, the evidence proves %q (%s); run `chartpilot bundle capabilities` for what is missing, or pass --force-capabilities",
				ErrCapabilityNotProven, declared, a.Proven(), a.unmetSummary(a.nextUnmet()))
		}
		g.warn("capabilities forced to %q; the evidence proves %q", declared, a.Proven())
		level = declared
	}
	csv.Annotations[AnnotationCapabilities] = level.String()
	g.res.Capabilities = level.String()
	return nil
}
