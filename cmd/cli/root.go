// Package cli holds chartpilot's cobra commands. Each command turns its flags
// into the options of a library package and calls it; no logic lives here.
package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// NewRootCommand returns the chartpilot command tree writing to streams.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chartpilot",
		Short: "Take a Helm chart to an operator that OLM installs and upgrades",
		Long: `chartpilot takes a Helm chart to a Kubernetes operator that Operator Lifecycle
Manager installs and upgrades through Subscriptions: the operator runtime,
scaffolding with least-privilege RBAC, bundles, scorecard, catalogs, and a local
cluster with real OLM to try all of it on one machine.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)

	// The kubectl conventions for reaching a cluster, for the commands that
	// do, and klog's -v: the same as the operator image's binary takes.
	configFlags := runcmd.AddClusterFlags(cmd.PersistentFlags())

	cmd.AddCommand(
		newVersionCommand(streams),
		newClusterCommand(streams),
		runcmd.New(streams, configFlags),
		newCatalogCommand(streams),
		newInitCommand(streams),
		newCreateCommand(streams),
		newGenerateCommand(streams),
		newOLMCommand(streams, configFlags),
		newDoctorCommand(streams, configFlags),
		newAdoptCommand(streams),
		newApplyCommand(streams, configFlags),
		newDeleteCommand(streams, configFlags),
		newDemoCommand(streams),
		newScorecardCommand(streams, configFlags),
		newBundleCommand(streams),
		newImageCommand(streams),
		newBackupCommand(streams, configFlags),
		newRestoreCommand(streams, configFlags),
		newScheduleCommand(streams, configFlags),
	)
	return cmd
}
