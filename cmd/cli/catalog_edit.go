package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// catalogInitOptions are catalog init's flags and arguments.
type catalogInitOptions struct {
	edit.InitOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	format  *enumFlag
}

func newCatalogInitCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogInitOptions{f: f, streams: streams, format: newEnumFlag(string(fbc.FormatYAML), fbc.Formats...)}
	cmd := &cobra.Command{
		Use:   "init [PACKAGE]",
		Short: "Add a package to the catalog: its olm.package with default channel, description and icon",
		Example: `  chartpilot catalog init --from-bundle bundle       # name, channel, description and icon from the bundle's CSV
  chartpilot catalog init my-operator --default-channel stable`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.FromBundle, "from-bundle", "", "a registry+v1 bundle directory whose CSV and annotations fill what is not given")
	fl.StringVar(&o.DefaultChannel, "default-channel", "", "the channel Subscriptions get when they name none (default: the bundle's, else set by the first add)")
	fl.StringVar(&o.Description, "description", "", "the package description (default: the bundle CSV's)")
	fl.Var(o.format, "format", "the package file's format: yaml or json")
	return cmd
}

func (o *catalogInitOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir, o.Format = o.f.dir, fbc.Format(o.format.String())
	if len(args) == 1 {
		o.Package = args[0]
	}
	return nil
}

func (o *catalogInitOptions) run(ctx context.Context) error {
	if err := edit.Init(ctx, o.InitOptions); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.streams.Out, "initialized the package in %s\n", o.Dir)
	return err
}

// catalogAddOptions are catalog add's flags and arguments.
type catalogAddOptions struct {
	edit.AddOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	scope   *enumFlag
	output  *enumFlag
}

func newCatalogAddCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogAddOptions{f: f, streams: streams, scope: newEnumFlag(edit.ChannelScopes[0], edit.ChannelScopes...), output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "add BUNDLE_DIR|BUNDLE_IMAGE",
		Short: "Publish a registry+v1 bundle (directory or image) in its package, placed in its channels by semver",
		Example: `  chartpilot catalog add bundle                                   # inline: no bundle image needed
  chartpilot catalog add bundle --image quay.io/me/op-bundle:v0.2.0
  chartpilot catalog add quay.io/me/op-bundle:v0.2.0              # pulled, published image-based
  chartpilot catalog add bundle --channels fast,stable --channel-scope minor   # fast-v0.2, stable-v0.2`,
		Long: `Publishes a registry+v1 bundle (directory or image) in its package, placed in
its channels by semver.

Its CRDs are compared with those of every bundle it upgrades in any channel
(the one it replaces, the ones it skips or its skipRange holds) by OLM v1's
upgrade-safety rules: a removed field, a changed type, a narrowed enum, a new
required field, a changed default, a tightened bound, a changed scope or a
removed stored version would break the CRs already on clusters. Each is
printed with the field, why and what to do instead, and the bundle is refused
unless --allow-unsafe-api-changes is given. New optional fields, new enum
values and loosened bounds pass silently.`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Image, "image", "", "the bundle image's pull spec; without it the bundle is published inline")
	fl.StringSliceVar(&o.Channels, "channels", nil, "channels to place the bundle in (default: its annotations'); conventions: alpha, candidate, fast, stable")
	fl.Var(o.scope, "channel-scope", "one channel per release line: none, major (stable-v1) or minor (stable-v1.2)")
	fl.BoolVar(&o.Replace, "replace", false, "replace a bundle of the same version or name")
	fl.BoolVar(&o.AllowUnsafeAPIChanges, "allow-unsafe-api-changes", false, "publish the bundle even when its CRDs break the CRs of a bundle it upgrades (printed as warnings)")
	fl.BoolVar(&o.InitPackage, "init-package", false, "initialize the bundle's package from the bundle (as catalog init --from-bundle) when the catalog does not have it")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *catalogAddOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir, o.BundleDir = o.f.dir, args[0]
	if ociimage.IsReference(args[0]) {
		o.BundleDir, o.BundleImage = "", args[0]
	}
	if s := o.scope.String(); s != "none" {
		o.Scope = edit.ChannelScope(s)
	}
	return nil
}

func (o *catalogAddOptions) validate() error {
	if o.BundleImage != "" && o.Image != "" {
		return fmt.Errorf("--image is for bundle directories; %s is published under its own reference", o.BundleImage)
	}
	return nil
}

func (o *catalogAddOptions) run(ctx context.Context) error {
	res, err := edit.Add(ctx, o.AddOptions)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(o.streams.ErrOut, "warning:", w)
	}
	for _, c := range res.APIChanges {
		fmt.Fprintf(o.streams.ErrOut, "warning: unsafe API change since %s (allowed): %s\n", c.Previous, c.Change)
	}
	return printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		mode := "inline"
		if !res.Inline {
			mode = "image " + cmp.Or(o.BundleImage, o.Image)
		}
		verb := "added"
		if res.Replaced != "" {
			verb = "replaced " + res.Replaced + " with"
		}
		fmt.Fprintf(w, "%s %s (%s, %s) to package %s\n", verb, res.Bundle, res.Version, mode, res.Package)
		for _, p := range res.Placements {
			line := "  channel " + p.Channel + ":"
			if p.Head {
				line += " head"
			}
			if p.Replaces != "" {
				line += ", replaces " + p.Replaces
			}
			if p.SkipRange != "" {
				line += ", skipRange '" + p.SkipRange + "'"
			}
			fmt.Fprintln(w, line)
		}
		return nil
	})
}

// catalogRemoveOptions are catalog remove's flags and arguments.
type catalogRemoveOptions struct {
	edit.RemoveOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	// oldArg is the bundle given the old way, as a second argument.
	oldArg string
}

func newCatalogRemoveCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogRemoveOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "remove PACKAGE --bundle BUNDLE",
		Short: "Take a bundle (by name or version) out of its package; its channels close over the gap",
		Long: `Takes the bundle out of the package; the bundles that upgraded from it upgrade
from what it upgraded from. The bundle is named by --bundle, as catalog
deprecate names it; the older form with the bundle as a second argument
(catalog remove PACKAGE BUNDLE) still works, with a warning.`,
		Example: `  chartpilot catalog remove my-operator --bundle 0.1.5
  chartpilot catalog remove my-operator --bundle my-operator.v0.1.5 --dir build/catalog`,
		Args: cobra.RangeArgs(1, 2),
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&o.Bundle, "bundle", "", "the bundle's name or version (required)")
	return cmd
}

func (o *catalogRemoveOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir, o.Package = o.f.dir, args[0]
	if len(args) == 2 {
		o.oldArg = args[1]
	}
	return nil
}

func (o *catalogRemoveOptions) validate() error {
	switch {
	case o.oldArg != "" && o.Bundle != "":
		return fmt.Errorf("the bundle is given twice: --bundle %s and the argument %s", o.Bundle, o.oldArg)
	case o.oldArg != "":
		fmt.Fprintf(o.streams.ErrOut, "warning: catalog remove PACKAGE BUNDLE is deprecated: use catalog remove %s --bundle %s\n", o.Package, o.oldArg)
		o.Bundle = o.oldArg
	case o.Bundle == "":
		return errors.New("name the bundle to remove: --bundle NAME or VERSION")
	}
	return nil
}

func (o *catalogRemoveOptions) run(ctx context.Context) error {
	name, err := edit.Remove(ctx, o.RemoveOptions)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "removed %s from package %s\n", name, o.Package)
	return err
}

// catalogDeprecateOptions are catalog deprecate's flags and arguments.
type catalogDeprecateOptions struct {
	edit.DeprecateOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
}

func newCatalogDeprecateCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogDeprecateOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "deprecate PACKAGE",
		Short: "Deprecate a bundle (--bundle), a channel (--channel) or the whole package, with a message for users",
		Example: `  chartpilot catalog deprecate my-operator --bundle 0.1.0 --message "CVE-2026-1234: upgrade to 0.1.1"
  chartpilot catalog deprecate my-operator --channel alpha --message "use stable"`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Bundle, "bundle", "", "the bundle's name or version")
	fl.StringVar(&o.Channel, "channel", "", "the channel")
	fl.StringVarP(&o.Message, "message", "m", "", "why, and what to do instead (required)")
	cmd.MarkFlagsMutuallyExclusive("bundle", "channel")
	_ = cmd.MarkFlagRequired("message")
	return cmd
}

func (o *catalogDeprecateOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir, o.Package = o.f.dir, args[0]
	return nil
}

func (o *catalogDeprecateOptions) run(ctx context.Context) error {
	if err := edit.Deprecate(ctx, o.DeprecateOptions); err != nil {
		return err
	}
	what := "package " + o.Package
	switch {
	case o.Bundle != "":
		what = "bundle " + o.Bundle + " of " + what
	case o.Channel != "":
		what = "channel " + o.Channel + " of " + what
	}
	_, err := fmt.Fprintf(o.streams.Out, "deprecated %s\n", what)
	return err
}
