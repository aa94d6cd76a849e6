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
		Example: `  chartpilot init my-operator --chart ./charts/webapp --domain example.com
  cd my-operator && make bundle VERSION=0.1.0
  chartpilot scorecard bundle
  chartpilot catalog add bundle --init-package && chartpilot catalog serve
  chartpilot olm subscribe my-operator -n demo --catalog-address 127.0.0.1:50051 --wait
  chartpilot demo                       # the whole journey on a local cluster`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)

	// klog's -v for every command, as the operator image's binary takes it.
	// The kubectl conventions for reaching a cluster (--kubeconfig,
	// --context, -n...) go only on the commands that reach one: each adds
	// configFlags to its own flags.
	runcmd.AddVerbosityFlag(cmd.PersistentFlags())
	configFlags := runcmd.NewConfigFlags()

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
