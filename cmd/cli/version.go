package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/version"
)

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	output := outputFlag()
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print chartpilot's version and the versions of Kubernetes, Helm and OLM it is built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, err := version.Get()
			if err != nil {
				return err
			}
			return printData(streams.Out, output.String(), info, info.Text)
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: text, json or yaml")
	return cmd
}
