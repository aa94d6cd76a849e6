package scorecardtests

// Suites: operator-sdk's two and chartpilot's cluster suite.
const (
	SuiteBasic      = "basic"
	SuiteOLM        = "olm"
	SuiteChartpilot = "chartpilot"
)

// The built-in tests. The first six are operator-sdk's, by the same names.
const (
	BasicCheckSpec        = "basic-check-spec"
	OLMBundleValidation   = "olm-bundle-validation"
	OLMCRDsHaveValidation = "olm-crds-have-validation"
	OLMCRDsHaveResources  = "olm-crds-have-resources"
	OLMSpecDescriptors    = "olm-spec-descriptors"
	OLMStatusDescriptors  = "olm-status-descriptors"
	ChartpilotInstall     = "chartpilot-install"
	ChartpilotUpgrade     = "chartpilot-upgrade"
	ChartpilotUninstall   = "chartpilot-uninstall"
	ChartpilotRBAC        = "chartpilot-rbac"
	ChartpilotInsights    = "chartpilot-insights"
	ChartpilotAutoscale   = "chartpilot-autoscale"
	// ChartpilotAutorollback takes arguments after its name; see
	// autorollbackArgs.
	ChartpilotAutorollback = "chartpilot-autorollback"
	// ChartpilotBackupRestore proves the backup and restore of the
	// operand's data (see operator/backup).
	ChartpilotBackupRestore = "chartpilot-backup-restore"
)
