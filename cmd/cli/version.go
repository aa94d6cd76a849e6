package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/version"
)

// versionOptions are version's flags.
type versionOptions struct {
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{streams: streams, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print chartpilot's version and the versions of Kubernetes, Helm and OLM it is built with",
		Example: `  chartpilot version
  chartpilot version -o json`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *versionOptions) run(context.Context) error {
	info, err := version.Get()
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), info, info.Text)
}
