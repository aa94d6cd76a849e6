package runcmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewOperatorRoot is the root command of the operator image's binary,
// chartpilot-operator: run and mover, none of chartpilot's build-time
// commands. It lives here, beside the commands it holds, so that the
// binary's main is one call and its tests run in this package's test
// binary, which links the same runtime.
func NewOperatorRoot(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "chartpilot-operator",
		Short:         "The chartpilot Helm operator runtime, as the operator image runs it",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	AddVerbosityFlag(cmd.PersistentFlags())
	cmd.AddCommand(New(streams, NewConfigFlags()), NewMover(streams))
	return cmd
}
