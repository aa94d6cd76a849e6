package cli

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog"
)

// catalogFlags are shared by the catalog subcommands.
type catalogFlags struct {
	dir string
}

func newCatalogCommand(streams genericiooptions.IOStreams) *cobra.Command {
	f := &catalogFlags{}
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Build, check and serve a file-based catalog that OLM installs and upgrades the operator from",
		Long: `A file-based catalog (FBC) directory holds one directory per package with its
olm.package, olm.channel, olm.bundle and olm.deprecations blobs. Bundles are
placed in channels by semver: a replaces chain in version order plus a
skipRange, so that any older version upgrades straight to the newest.

Bundles are published image-based (--image: OLM unpacks the bundle image) or
inline (no image: the manifests are stored in the catalog and OLM installs
them without unpacking anything, which the local cluster needs). Every change
is validated first and written atomically.`,
	}
	cmd.PersistentFlags().StringVar(&f.dir, "dir", "catalog", "the catalog directory")
	cmd.AddCommand(
		newCatalogInitCommand(streams, f),
		newCatalogAddCommand(streams, f),
		newCatalogRemoveCommand(streams, f),
		newCatalogDeprecateCommand(streams, f),
		newCatalogRenderCommand(streams, f),
		newCatalogValidateCommand(streams, f),
		newCatalogGraphCommand(streams, f),
		newCatalogServeCommand(streams, f),
	)
	return cmd
}

func newCatalogInitCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var opts catalog.InitOptions
	format := newEnumFlag(string(catalog.FormatYAML), catalog.Formats...)
	cmd := &cobra.Command{
		Use:   "init [PACKAGE]",
		Short: "Add a package to the catalog: its olm.package with default channel, description and icon",
		Example: `  chartpilot catalog init --from-bundle bundle       # name, channel, description and icon from the bundle's CSV
  chartpilot catalog init my-operator --default-channel stable`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Format = f.dir, catalog.Format(format.String())
			if len(args) == 1 {
				opts.Package = args[0]
			}
			if err := catalog.Init(opts); err != nil {
				return err
			}
			_, err := fmt.Fprintf(streams.Out, "initialized the package in %s\n", f.dir)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.FromBundle, "from-bundle", "", "a registry+v1 bundle directory whose CSV and annotations fill what is not given")
	fl.StringVar(&opts.DefaultChannel, "default-channel", "", "the channel Subscriptions get when they name none (default: the bundle's, else set by the first add)")
	fl.StringVar(&opts.Description, "description", "", "the package description (default: the bundle CSV's)")
	fl.Var(format, "format", "the package file's format: yaml or json")
	return cmd
}

func newCatalogAddCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var opts catalog.AddOptions
	scope := newEnumFlag(catalog.ChannelScopes[0], catalog.ChannelScopes...)
	output := outputFlag()
	cmd := &cobra.Command{
		Use:   "add BUNDLE_DIR",
		Short: "Publish a registry+v1 bundle directory in its package, placed in its channels by semver",
		Example: `  chartpilot catalog add bundle                                   # inline: no bundle image needed
  chartpilot catalog add bundle --image quay.io/me/op-bundle:v0.2.0
  chartpilot catalog add bundle --channels fast,stable --channel-scope minor   # fast-v0.2, stable-v0.2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.BundleDir = f.dir, args[0]
			if s := scope.String(); s != "none" {
				opts.Scope = catalog.ChannelScope(s)
			}
			res, err := catalog.Add(opts)
			if err != nil {
				return err
			}
			return printData(streams.Out, output.String(), res, func(w io.Writer) error {
				mode := "inline"
				if !res.Inline {
					mode = "image " + opts.Image
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
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Image, "image", "", "the bundle image's pull spec; without it the bundle is published inline")
	fl.StringSliceVar(&opts.Channels, "channels", nil, "channels to place the bundle in (default: its annotations'); conventions: alpha, candidate, fast, stable")
	fl.Var(scope, "channel-scope", "one channel per release line: none, major (stable-v1) or minor (stable-v1.2)")
	fl.BoolVar(&opts.Replace, "replace", false, "replace a bundle of the same version or name")
	fl.VarP(output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func newCatalogRemoveCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "remove PACKAGE BUNDLE",
		Short: "Take a bundle (by name or version) out of its package; its channels close over the gap",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := catalog.Remove(catalog.RemoveOptions{Dir: f.dir, Package: args[0], Bundle: args[1]})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "removed %s from package %s\n", name, args[0])
			return err
		},
	}
}

func newCatalogDeprecateCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var opts catalog.DeprecateOptions
	cmd := &cobra.Command{
		Use:   "deprecate PACKAGE",
		Short: "Deprecate a bundle (--bundle), a channel (--channel) or the whole package, with a message for users",
		Example: `  chartpilot catalog deprecate my-operator --bundle 0.1.0 --message "CVE-2026-1234: upgrade to 0.1.1"
  chartpilot catalog deprecate my-operator --channel alpha --message "use stable"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.Package = f.dir, args[0]
			if err := catalog.Deprecate(opts); err != nil {
				return err
			}
			what := "package " + opts.Package
			switch {
			case opts.Bundle != "":
				what = "bundle " + opts.Bundle + " of " + what
			case opts.Channel != "":
				what = "channel " + opts.Channel + " of " + what
			}
			_, err := fmt.Fprintf(streams.Out, "deprecated %s\n", what)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Bundle, "bundle", "", "the bundle's name or version")
	fl.StringVar(&opts.Channel, "channel", "", "the channel")
	fl.StringVarP(&opts.Message, "message", "m", "", "why, and what to do instead (required)")
	cmd.MarkFlagsMutuallyExclusive("bundle", "channel")
	_ = cmd.MarkFlagRequired("message")
	return cmd
}

func newCatalogRenderCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	output := newEnumFlag(string(catalog.FormatYAML), catalog.Formats...)
	cmd := &cobra.Command{
		Use:   "render [PACKAGE...]",
		Short: "Print the catalog (or some packages) as one FBC stream in a stable order",
		RunE: func(cmd *cobra.Command, args []string) error {
			return catalog.Render(cmd.Context(), streams.Out, catalog.RenderOptions{Dir: f.dir, Format: catalog.Format(output.String()), Packages: args})
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: yaml or json")
	return cmd
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := catalog.Validate(cmd.Context(), catalog.ValidateOptions{Dir: f.dir}); err != nil {
				return err
			}
			_, err := fmt.Fprintf(streams.Out, "catalog %s is valid\n", f.dir)
			return err
		},
	}
}

func newCatalogGraphCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "graph [PACKAGE...]",
		Short: "Print the upgrade graph of every channel as a mermaid flowchart",
		RunE: func(cmd *cobra.Command, args []string) error {
			return catalog.Graph(cmd.Context(), streams.Out, catalog.GraphOptions{Dir: f.dir, Packages: args})
		},
	}
}

func newCatalogServeCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	opts := catalog.ServeOptions{Address: catalog.DefaultServeAddress}
	var port int
	var verbose bool
	cmd := &cobra.Command{
		Use:   "serve [DIR]",
		Short: "Serve OLM's registry gRPC API for the catalog directory (on loopback by default)",
		Long: `Serves the catalog the way ` + "`opm serve`" + ` does: api.Registry, grpc health and
reflection. Point a CatalogSource at it with spec.sourceType grpc and
spec.address HOST:PORT. Stop with Ctrl-C.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = f.dir
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if port != 0 {
				host, _, err := net.SplitHostPort(opts.Address)
				if err != nil {
					return fmt.Errorf("--address: %w", err)
				}
				opts.Address = net.JoinHostPort(host, strconv.Itoa(port))
			}
			if verbose {
				opts.Log = streams.ErrOut
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			return catalog.Serve(ctx, opts, func(addr string) {
				fmt.Fprintf(streams.Out, "serving catalog %s on %s\n", opts.Dir, addr)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Address, "address", opts.Address, "host:port to listen on")
	fl.IntVar(&port, "port", 0, "port to listen on, overriding the port of --address")
	fl.StringVar(&opts.CacheDir, "cache-dir", "", "keep the serving cache here between runs (default: a temporary directory)")
	fl.BoolVar(&verbose, "verbose", false, "log the cache build to stderr")
	return cmd
}
