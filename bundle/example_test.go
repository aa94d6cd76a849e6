package bundle_test

import (
	"fmt"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

// Assess computes the capability level from evidence: an upgrade path and
// a passing scorecard upgrade test make Seamless Upgrades; Full Lifecycle
// needs backup and restore, which chartpilot does not have.
func ExampleAssess() {
	a := bundle.Assess(bundle.Evidence{
		Deployments: 1,
		OwnedAPIs:   []string{"Webapp"},
		Samples:     []string{"Webapp"},
		Replaces:    "webapp-operator.v0.1.0",
		Scorecard: map[string]bundle.TestState{
			scorecardtests.ChartpilotInstall: "pass", scorecardtests.ChartpilotRBAC: "pass", scorecardtests.ChartpilotUpgrade: "pass", scorecardtests.ChartpilotUninstall: "pass",
		},
	})
	fmt.Println(a.Level)
	for _, l := range a.Levels {
		for _, c := range l.Criteria {
			if !c.Met && l.Level == bundle.LevelFullLifecycle {
				fmt.Println("unmet:", c.Name)
			}
		}
	}
	// Output:
	// Seamless Upgrades
	// unmet: backup and restore
}
