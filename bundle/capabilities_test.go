package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
	"github.com/chartpilot/chartpilot/scaffold"
)

// passing is scorecard evidence where the given tests passed.
func passing(tests ...string) map[string]TestState {
	m := map[string]TestState{}
	for _, t := range tests {
		m[t] = TestState(v1alpha3.PassState)
	}
	return m
}

// basic is the evidence of a generated first bundle.
func basic() Evidence {
	return Evidence{Deployments: 1, OwnedAPIs: []string{"Webapp"}, Samples: []string{"Webapp"}, MetricsService: true}
}

// autorollbackCriterion is the Auto Pilot criterion the autorollback test proves.
const autorollbackCriterion = "auto rollback proven: an upgrade that breaks the operand is rolled back to the last healthy revision within its health deadline, the reason in status (scorecard chartpilot-autorollback)"

// insightsCriterion is the Deep Insights criterion the insights test proves.
const insightsCriterion = "the operator reports the operand's health: its metrics, status health and events, and alerts Prometheus loads (scorecard chartpilot-insights)"

// autoscaleCriterion is the Auto Pilot criterion the autoscale test proves.
const autoscaleCriterion = "auto-scaling: an HPA per Deployment and StatefulSet as the CR asks, its replica count kept through upgrades (scorecard chartpilot-autoscale)"

func TestAssess(t *testing.T) {
	tests := []struct {
		name string
		// edit changes the basic evidence
		edit  func(*Evidence)
		want  Level
		unmet []string // criteria expected unmet
		met   []Level  // levels expected met, whatever the computed level
		// metCriteria are criteria expected met.
		metCriteria []string
	}{{
		name:  "no scorecard results: the floor, install not proven",
		edit:  func(*Evidence) {},
		want:  LevelBasicInstall,
		unmet: []string{"a CR installs the operand (scorecard chartpilot-install)", "operator upgrade path"},
	}, {
		name: "install and rbac proven, first release: Basic Install met, no upgrade path",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade)
		},
		want: LevelBasicInstall, unmet: []string{"operator upgrade path"},
	}, {
		name: "an upgrade path without a passing upgrade test is not Seamless Upgrades",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC)
			e.Replaces = "op.v0.1.0"
		},
		want: LevelBasicInstall, unmet: []string{"an operand survives an operator upgrade (scorecard chartpilot-upgrade)"},
	}, {
		name: "upgrade proven: Seamless Upgrades",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade)
			e.SkipRange = ">=0.1.0 <0.2.0"
		},
		want: LevelSeamlessUpgrades,
	}, {
		name: "everything proven still stops before Full Lifecycle: no backup",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{"backup and restore", autoscaleCriterion, insightsCriterion},
	}, {
		name: "backup and restore proven with uninstall: Full Lifecycle",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotBackupRestore)
			e.Replaces = "op.v0.1.0"
		},
		want: LevelFullLifecycle, unmet: []string{autoscaleCriterion, autorollbackCriterion, insightsCriterion},
	}, {
		name: "backup and restore without a proven uninstall is not Full Lifecycle",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotBackupRestore)
			e.Replaces = "op.v0.1.0"
		},
		want: LevelSeamlessUpgrades, unmet: []string{"backup and restore"},
	}, {
		name: "insights proven: every Deep Insights criterion met, the level still waits for Full Lifecycle",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotInsights)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{"backup and restore"}, met: []Level{LevelDeepInsights},
	}, {
		name: "autoscale proven: its criterion met, the level still waits for Full Lifecycle",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotInsights, scorecardtests.ChartpilotAutoscale)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{"backup and restore"}, met: []Level{LevelDeepInsights},
		metCriteria: []string{autoscaleCriterion},
	}, {
		name: "a failed autoscale test",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotInsights)
			e.Scorecard[scorecardtests.ChartpilotAutoscale] = TestState(v1alpha3.FailState)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{autoscaleCriterion},
	}, {
		name: "auto rollback proven: its criterion met, Auto Pilot still waits for the levels below and autoscaling",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade, scorecardtests.ChartpilotUninstall, scorecardtests.ChartpilotInsights, scorecardtests.ChartpilotAutorollback)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{"backup and restore", autoscaleCriterion}, met: []Level{LevelDeepInsights},
		metCriteria: []string{autorollbackCriterion},
	}, {
		name: "auto rollback not proven (a cluster that cannot break the operand)",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall)
			e.Scorecard[scorecardtests.ChartpilotAutorollback] = TestState(v1alpha3.ErrorState)
		},
		want: LevelBasicInstall, unmet: []string{autorollbackCriterion},
	}, {
		name: "a failed insights test",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotInstall, scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade)
			e.Scorecard[scorecardtests.ChartpilotInsights] = TestState(v1alpha3.FailState)
			e.Replaces, e.ServiceMonitor, e.PrometheusRule = "op.v0.1.0", true, true
		},
		want: LevelSeamlessUpgrades, unmet: []string{insightsCriterion},
	}, {
		name: "a failed install test",
		edit: func(e *Evidence) {
			e.Scorecard = passing(scorecardtests.ChartpilotRBAC, scorecardtests.ChartpilotUpgrade)
			e.Scorecard[scorecardtests.ChartpilotInstall] = TestState(v1alpha3.FailState)
			e.Replaces = "op.v0.1.0"
		},
		want: LevelBasicInstall, unmet: []string{"a CR installs the operand (scorecard chartpilot-install)"},
	}, {
		name:  "a kind without a sample",
		edit:  func(e *Evidence) { e.OwnedAPIs = append(e.OwnedAPIs, "Cache") },
		want:  LevelBasicInstall,
		unmet: []string{"a sample per owned API"},
	}, {
		name:  "drift repair off for a kind",
		edit:  func(e *Evidence) { e.DriftRepairDisabled = []string{"Webapp"} },
		want:  LevelBasicInstall,
		unmet: []string{"drift repair"},
	}, {
		name:  "no metrics Service",
		edit:  func(e *Evidence) { e.MetricsService = false },
		want:  LevelBasicInstall,
		unmet: []string{"operator metrics", "monitoring", "alerts"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := basic()
			tt.edit(&ev)
			a := Assess(ev)
			if a.Level != tt.want {
				t.Errorf("level %s, want %s", a.Level, tt.want)
			}
			checkReportAgrees(t, a)
			unmet := map[string]string{}
			for _, l := range a.Levels {
				for _, c := range l.Criteria {
					if !c.Met {
						unmet[c.Name] = c.Why
					}
					if c.Why == "" {
						t.Errorf("%s: %s says no why", l.Level, c.Name)
					}
				}
			}
			for _, l := range a.Levels {
				if slices.Contains(tt.met, l.Level) && !l.Met {
					t.Errorf("%s is not met", l.Level)
				}
			}
			for _, m := range tt.metCriteria {
				if why, ok := unmet[m]; ok {
					t.Errorf("%q is unmet: %s", m, why)
				}
			}
			for _, u := range tt.unmet {
				if _, ok := unmet[u]; !ok {
					t.Errorf("%q is not unmet; unmet: %v", u, unmet)
				}
			}
		})
	}
}

// checkReportAgrees checks that the report's first line says no more
// than its levels do: a level it names is met below; when Basic Install is
// unmet, it names no level as proven.
func checkReportAgrees(t *testing.T, a *Assessment) {
	t.Helper()
	var out strings.Builder
	if err := a.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(out.String(), "\n")
	floorMet := a.Levels[0].Met
	switch {
	case floorMet && head != "capability level: "+a.Level.String():
		t.Errorf("report opens %q, want the proven level %s", head, a.Level)
	case floorMet && !strings.Contains(out.String(), fmt.Sprintf("\n%d %s: met\n", int(a.Level), a.Level)):
		t.Errorf("report names %s but does not show it met:\n%s", a.Level, out.String())
	case !floorMet && !strings.HasPrefix(head, "capability level: none proven"):
		t.Errorf("Basic Install is unmet, yet the report opens %q", head)
	case a.Met != floorMet:
		t.Errorf("Met = %v, but Basic Install met = %v", a.Met, floorMet)
	}
}

func TestParseLevel(t *testing.T) {
	for l := LevelBasicInstall; l <= LevelAutoPilot; l++ {
		if got, ok := ParseLevel(strings.ToLower(l.String())); !ok || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l, got, ok)
		}
	}
	if _, ok := ParseLevel("Level 3"); ok {
		t.Error("accepted an unknown level")
	}
}

func writeResults(t *testing.T, states map[string]v1alpha3.State) string {
	t.Helper()
	list := v1alpha3.NewTestList()
	for name, st := range states {
		test := v1alpha3.NewTest()
		test.Spec.Labels = map[string]string{"test": name}
		test.Status.Results = []v1alpha3.TestResult{{Name: name, State: st}}
		list.Items = append(list.Items, test)
	}
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Generate writes the computed level; scorecard results and a catalog
// predecessor lift it to Seamless Upgrades; AssessProject agrees.
func TestGenerateComputesCapabilities(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	res := mustGenerate(t, dir, GenerateOptions{})
	if res.Capabilities != "Basic Install" {
		t.Errorf("first bundle: %s", res.Capabilities)
	}
	results := writeResults(t, map[string]v1alpha3.State{scorecardtests.ChartpilotInstall: v1alpha3.PassState, scorecardtests.ChartpilotRBAC: v1alpha3.PassState, scorecardtests.ChartpilotUpgrade: v1alpha3.PassState, scorecardtests.ChartpilotUninstall: v1alpha3.FailState})
	res = mustGenerate(t, dir, GenerateOptions{Version: "0.2.0", Replaces: "webapp-operator.v0.1.0", ScorecardResults: results})
	if res.Capabilities != "Seamless Upgrades" || readCSV(t, dir).Annotations[AnnotationCapabilities] != "Seamless Upgrades" {
		t.Errorf("with upgrade evidence: %s", res.Capabilities)
	}
	a, err := AssessProject(CapabilitiesOptions{Dir: dir, ScorecardResults: results})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := a.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capability level: Seamless Upgrades", "[x] an operand survives an operator upgrade (scorecard chartpilot-upgrade): chartpilot-upgrade passed",
		"[ ] deleting a CR removes what its release created (scorecard chartpilot-uninstall): not proven: chartpilot-uninstall ended in state fail",
		"[ ] backup and restore"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}

	// A declared level above the proven one passes only when forced.
	p := filepath.Join(dir, "config", "manifests", "bases", "webapp-operator.clusterserviceversion.yaml")
	replaceInFile(t, p, "capabilities: Basic Install", "capabilities: Full Lifecycle")
	res = mustGenerate(t, dir, GenerateOptions{Version: "0.2.0", Replaces: "webapp-operator.v0.1.0", ScorecardResults: results, ForceCapabilities: true})
	if res.Capabilities != "Full Lifecycle" || len(res.Warnings) == 0 {
		t.Errorf("forced: %s, warnings %v", res.Capabilities, res.Warnings)
	}

	if _, err := AssessProject(CapabilitiesOptions{Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "run `chartpilot bundle generate` first") {
		t.Errorf("no bundle: %v", err)
	}
}
