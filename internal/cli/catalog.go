package cli

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/ociimage"
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
		newCatalogBuildCommand(streams, f),
		newCatalogPushCommand(streams, f),
		newCatalogDockerfileCommand(streams, f),
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
		Use:   "add BUNDLE_DIR|BUNDLE_IMAGE",
		Short: "Publish a registry+v1 bundle (directory or image) in its package, placed in its channels by semver",
		Example: `  chartpilot catalog add bundle                                   # inline: no bundle image needed
  chartpilot catalog add bundle --image quay.io/me/op-bundle:v0.2.0
  chartpilot catalog add quay.io/me/op-bundle:v0.2.0              # pulled, published image-based
  chartpilot catalog add bundle --channels fast,stable --channel-scope minor   # fast-v0.2, stable-v0.2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir, opts.BundleDir = f.dir, args[0]
			if ociimage.IsReference(args[0]) {
				if opts.Image != "" {
					return fmt.Errorf("--image is for bundle directories; %s is published under its own reference", args[0])
				}
				opts.BundleDir, opts.BundleImage = "", args[0]
			}
			if s := scope.String(); s != "none" {
				opts.Scope = catalog.ChannelScope(s)
			}
			res, err := catalog.AddContext(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return printData(streams.Out, output.String(), res, func(w io.Writer) error {
				mode := "inline"
				if !res.Inline {
					mode = "image " + cmp.Or(opts.BundleImage, opts.Image)
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
	fl.BoolVar(&opts.InitPackage, "init-package", false, "initialize the bundle's package from the bundle (as catalog init --from-bundle) when the catalog does not have it")
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
	format := newEnumFlag(catalog.GraphMermaid, catalog.GraphMermaid, catalog.GraphSVG)
	cmd := &cobra.Command{
		Use:   "graph [PACKAGE...]",
		Short: "Print the upgrade graph of every channel as a mermaid flowchart or an SVG picture",
		Example: `  chartpilot catalog graph --dir catalog
  chartpilot catalog graph --dir catalog --format svg > graph.svg`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return catalog.Graph(cmd.Context(), streams.Out, catalog.GraphOptions{Dir: f.dir, Packages: args, Format: format.String()})
		},
	}
	cmd.Flags().Var(format, "format", "mermaid (text for markdown) or svg (a picture, laid out without graphviz)")
	return cmd
}

// serveOptions are catalog serve's flags and arguments.
type serveOptions struct {
	catalog.ServeOptions
	streams genericiooptions.IOStreams
	port    int
	verbose bool
}

func newCatalogServeCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &serveOptions{ServeOptions: catalog.ServeOptions{Address: catalog.DefaultServeAddress}, streams: streams}
	cmd := &cobra.Command{
		Use:   "serve [DIR|IMAGE]",
		Short: "Serve OLM's registry gRPC API for a catalog directory or image (on loopback by default)",
		Long: `Serves the catalog the way ` + "`opm serve`" + ` does: api.Registry, grpc health and
reflection. Point a CatalogSource at it with spec.sourceType grpc and
spec.address HOST:PORT. An argument that is not a directory is taken as a
catalog image, pulled with the docker credentials. Stop with Ctrl-C.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, f, args); err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			return o.run(ctx)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Procs, "procs", 1, "threads running Go code (GOMAXPROCS) once the catalog is loaded, which uses every CPU; 0 keeps the default (GOMAXPROCS in the environment is kept unless --procs is given)")
	fl.StringVar(&o.Address, "address", o.Address, "host:port to listen on")
	fl.IntVar(&o.port, "port", 0, "port to listen on, overriding the port of --address")
	fl.BoolVar(&o.verbose, "verbose", false, "log the catalog load (sizes, durations) to stderr")
	fl.DurationVar(&o.ShutdownGrace, "shutdown-grace", catalog.DefaultShutdownGrace, "on SIGTERM or Ctrl-C, how long calls in flight may take to finish before they are cut off")
	return cmd
}

func (o *serveOptions) complete(cmd *cobra.Command, f *catalogFlags, args []string) error {
	o.Dir = f.dir
	if len(args) == 1 {
		o.Dir = args[0]
		if ociimage.IsReference(args[0]) {
			o.Dir, o.Image = "", args[0]
		}
	}
	if o.port != 0 {
		host, _, err := net.SplitHostPort(o.Address)
		if err != nil {
			return fmt.Errorf("--address: %w", err)
		}
		o.Address = net.JoinHostPort(host, strconv.Itoa(o.port))
	}
	if o.verbose {
		o.Log = o.streams.ErrOut
	}
	// GOMAXPROCS in the environment is the user's choice, unless --procs is.
	if !cmd.Flags().Changed("procs") && os.Getenv("GOMAXPROCS") != "" {
		o.Procs = 0
	}
	return nil
}

func (o *serveOptions) run(ctx context.Context) error {
	what := cmp.Or(o.Image, o.Dir)
	return catalog.Serve(ctx, o.ServeOptions, func(addr string) {
		fmt.Fprintf(o.streams.Out, "serving catalog %s on %s\n", what, addr)
	})
}

// imageFlags are the flags of the commands that build a catalog image.
type imageFlags struct {
	opts   catalog.ImageOptions
	labels map[string]string
}

func (fl *imageFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&fl.opts.Base, "base", "", "base image, e.g. "+catalog.DefaultBaseImage+" for an image that serves itself (default: none, the image only carries the catalog)")
	cmd.Flags().StringToStringVar(&fl.labels, "label", nil, "extra image labels, key=value")
	cmd.Flags().BoolVar(&fl.opts.NoCache, "no-cache", false, "leave out the pre-built serving cache")
}

func (fl *imageFlags) build(cmd *cobra.Command, dir string) (v1.Image, string, error) {
	fl.opts.Dir, fl.opts.Labels = dir, fl.labels
	img, err := catalog.BuildImage(cmd.Context(), fl.opts)
	if err != nil {
		return nil, "", err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, "", err
	}
	return img, d.String(), nil
}

func newCatalogBuildCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var fl imageFlags
	var store storeFlag
	var ociLayout, tag, push, image string
	var bundles []string
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the catalog image without a container engine: kept for `image push`, into an OCI layout and/or a registry",
		Long: `Builds the catalog image opm's catalog.Dockerfile would: the catalog under
/configs, the serving cache pre-built under /tmp/cache, and the label
` + catalog.ConfigsLabel + `=/configs. No Docker daemon is
needed; the layers are reproducible.

With --bundles, the bundle images are published in the catalog first (pulled,
image-based, placed by semver; a package the catalog lacks is initialized from
its first bundle; a bundle already there is replaced), as operator-sdk's
catalog-build does with opm.`,
		Example: `  chartpilot catalog build --image quay.io/me/my-operator-catalog:v0.2.0 --bundles quay.io/me/my-operator-bundle:v0.2.0
  chartpilot image push quay.io/me/my-operator-catalog:v0.2.0
  chartpilot catalog build --oci-layout build/catalog-oci --tag v0.2.0
  chartpilot catalog build --push quay.io/me/my-operator-catalog:v0.2.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ociLayout == "" && push == "" && image == "" {
				return fmt.Errorf("say where the image goes: --image REF (kept for chartpilot image push), --oci-layout DIR and/or --push REF")
			}
			for _, b := range bundles {
				res, err := catalog.AddContext(cmd.Context(), catalog.AddOptions{Dir: f.dir, BundleImage: b, Replace: true, InitPackage: true})
				if err != nil {
					return fmt.Errorf("publishing %s: %w", b, err)
				}
				fmt.Fprintf(streams.Out, "published %s (%s) in package %s\n", res.Bundle, b, res.Package)
			}
			img, digest, err := fl.build(cmd, f.dir)
			if err != nil {
				return err
			}
			if image != "" {
				if err := keepImage(cmd, streams, &store, img, image, ""); err != nil {
					return err
				}
			}
			if ociLayout != "" {
				if err := catalog.WriteOCILayout(img, ociLayout, tag); err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "wrote %s to OCI layout %s\n", digest, ociLayout)
			}
			if push != "" {
				if _, err := catalog.PushImage(cmd.Context(), img, push); err != nil {
					return err
				}
				fmt.Fprintf(streams.Out, "pushed %s@%s\n", push, digest)
			}
			return nil
		},
	}
	fl.add(cmd)
	store.add(cmd)
	cmd.Flags().StringVar(&image, "image", "", "keep the image in the image store under `REF`, for chartpilot image push")
	cmd.Flags().StringSliceVar(&bundles, "bundles", nil, "bundle images to publish in the catalog before building")
	cmd.Flags().StringVar(&ociLayout, "oci-layout", "", "write the image into this OCI image layout directory")
	cmd.Flags().StringVar(&tag, "tag", "latest", "the tag recorded in the OCI layout")
	cmd.Flags().StringVar(&push, "push", "", "push the image to this reference")
	return cmd
}

func newCatalogPushCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var fl imageFlags
	cmd := &cobra.Command{
		Use:   "push IMAGE",
		Short: "Build the catalog image without a container engine and push it (docker credentials)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			img, digest, err := fl.build(cmd, f.dir)
			if err != nil {
				return err
			}
			if _, err := catalog.PushImage(cmd.Context(), img, args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "pushed %s@%s\n", args[0], digest)
			return err
		},
	}
	fl.add(cmd)
	return cmd
}

func newCatalogDockerfileCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	var opts catalog.DockerfileOptions
	var file string
	cmd := &cobra.Command{
		Use:   "dockerfile",
		Short: "Write a catalog.Dockerfile for docker and podman users (the image build does the same without them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.CatalogDir = f.dir
			var buf bytes.Buffer
			if err := catalog.WriteDockerfile(&buf, opts); err != nil {
				return err
			}
			if file == "-" {
				_, err := streams.Out.Write(buf.Bytes())
				return err
			}
			if err := atomicfile.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				return err
			}
			_, err := fmt.Fprintf(streams.Out, "wrote %s\n", file)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.BaseImage, "base", catalog.DefaultBaseImage, "the opm image to build from")
	cmd.Flags().StringVarP(&file, "file", "f", "catalog.Dockerfile", "where to write it; - for standard output")
	return cmd
}
