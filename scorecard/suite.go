package scorecard

import "github.com/chartpilot/chartpilot/internal/scorecardtests"

// builtins lists every test, in the default order.
func builtins() []builtin {
	return []builtin{
		{name: scorecardtests.BasicCheckSpec, suite: scorecardtests.SuiteBasic, run: checkSpec},
		{name: scorecardtests.OLMBundleValidation, suite: scorecardtests.SuiteOLM, run: bundleValidation},
		{name: scorecardtests.OLMCRDsHaveValidation, suite: scorecardtests.SuiteOLM, run: crdsHaveValidation},
		{name: scorecardtests.OLMCRDsHaveResources, suite: scorecardtests.SuiteOLM, run: crdsHaveResources},
		{name: scorecardtests.OLMSpecDescriptors, suite: scorecardtests.SuiteOLM, run: specDescriptors},
		{name: scorecardtests.OLMStatusDescriptors, suite: scorecardtests.SuiteOLM, run: statusDescriptors},
		{name: scorecardtests.ChartpilotInstall, suite: scorecardtests.SuiteChartpilot, cluster: true, run: installTest},
		{name: scorecardtests.ChartpilotUpgrade, suite: scorecardtests.SuiteChartpilot, cluster: true, previous: true, run: upgradeTest},
		{name: scorecardtests.ChartpilotUninstall, suite: scorecardtests.SuiteChartpilot, cluster: true, run: uninstallTest},
		{name: scorecardtests.ChartpilotRBAC, suite: scorecardtests.SuiteChartpilot, cluster: true, previous: true, run: rbacTest},
		{name: scorecardtests.ChartpilotInsights, suite: scorecardtests.SuiteChartpilot, cluster: true, run: insightsTest},
		{name: scorecardtests.ChartpilotAutoscale, suite: scorecardtests.SuiteChartpilot, cluster: true, run: autoscaleTest},
		{name: scorecardtests.ChartpilotAutorollback, suite: scorecardtests.SuiteChartpilot, cluster: true, run: autorollbackTest},
		{name: scorecardtests.ChartpilotBackupRestore, suite: scorecardtests.SuiteChartpilot, cluster: true, run: backupRestoreTest},
	}
}

func lookupBuiltin(name string) (builtin, bool) {
	for _, b := range builtins() {
		if b.name == name {
			return b, true
		}
	}
	return builtin{}, false
}

func builtinNames() []string {
	var names []string
	for _, b := range builtins() {
		names = append(names, b.name)
	}
	return names
}
