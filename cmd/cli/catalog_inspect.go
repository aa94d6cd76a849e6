package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/catalog/render"
	"github.com/chartpilot/chartpilot/catalog/validate"
)

// catalogRenderOptions are catalog render's flags and arguments.
type catalogRenderOptions struct {
	render.Options
	f       *catalogFlags
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newCatalogRenderCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogRenderOptions{f: f, streams: streams, output: newEnumFlag(string(fbc.FormatYAML), fbc.Formats...)}
	cmd := &cobra.Command{
		Use:   "render [PACKAGE...]",
		Short: "Print the catalog (or some packages) as one FBC stream in a stable order",
		Example: `  chartpilot catalog render --dir catalog > index.yaml
  chartpilot catalog render my-operator --dir catalog -o json`,
		RunE: runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: yaml or json")
	return cmd
}

func (o *catalogRenderOptions) complete(_ *cobra.Command, args []string) error {
	o.Format, o.Packages = fbc.Format(o.output.String()), args
	return nil
}

func (o *catalogRenderOptions) run(ctx context.Context) error {
	fsys, err := fbc.DirFS(o.f.dir)
	if err != nil {
		return err
	}
	return render.Render(ctx, o.streams.Out, fsys, o.Options)
}

// catalogValidateOptions are catalog validate's flags.
type catalogValidateOptions struct {
	f       *catalogFlags
	streams genericiooptions.IOStreams
}

func newCatalogValidateCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the catalog with operator-registry's validation and the upgrade-graph checks; print every problem",
		Long: `Checks every package with operator-registry's model validation and with
chartpilot's graph checks: exactly one head per channel, an upgrade path from
every bundle to the head (no stranded bundles), no skip that strands the
users of an older bundle, no replaces or skips pointing at a newer version.
All problems are printed as a tree naming package, channel and bundle.`,
		Example: `  chartpilot catalog validate --dir catalog`,
		Args:    cobra.NoArgs,
		RunE:    runOptions(&catalogValidateOptions{f: f, streams: streams}),
	}
}

func (o *catalogValidateOptions) run(ctx context.Context) error {
	fsys, err := fbc.DirFS(o.f.dir)
	if err != nil {
		return err
	}
	if err := validate.FS(ctx, o.f.dir, fsys); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "catalog %s is valid\n", o.f.dir)
	return err
}

// catalogGraphOptions are catalog graph's flags and arguments.
type catalogGraphOptions struct {
	render.GraphOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	format  *enumFlag
}

func newCatalogGraphCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogGraphOptions{f: f, streams: streams, format: newEnumFlag(render.GraphMermaid, render.GraphMermaid, render.GraphSVG)}
	cmd := &cobra.Command{
		Use:   "graph [PACKAGE...]",
		Short: "Print the upgrade graph of every channel as a mermaid flowchart or an SVG picture",
		Example: `  chartpilot catalog graph --dir catalog
  chartpilot catalog graph --dir catalog --format svg > graph.svg`,
		RunE: runOptions(o),
	}
	cmd.Flags().Var(o.format, "format", "mermaid (text for markdown) or svg (a picture, laid out without graphviz)")
	return cmd
}

func (o *catalogGraphOptions) complete(_ *cobra.Command, args []string) error {
	o.Packages, o.Format = args, o.format.String()
	return nil
}

func (o *catalogGraphOptions) run(ctx context.Context) error {
	fsys, err := fbc.DirFS(o.f.dir)
	if err != nil {
		return err
	}
	return render.Graph(ctx, o.streams.Out, fsys, o.GraphOptions)
}
