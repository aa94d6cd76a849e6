package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog"
	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/cmd/runcmd"
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
is validated first and written atomically.

Every command takes the package as its argument and what in it by flags
(--bundle, --channel); --dir names the catalog.`,
		Example: `  chartpilot catalog add bundle --init-package --dir catalog
  chartpilot catalog validate --dir catalog
  chartpilot catalog graph --dir catalog
  chartpilot catalog serve --dir catalog`,
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

// catalogInitOptions are catalog init's flags and arguments.
type catalogInitOptions struct {
	catalog.InitOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	format  *enumFlag
}

func newCatalogInitCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogInitOptions{f: f, streams: streams, format: newEnumFlag(string(catalog.FormatYAML), catalog.Formats...)}
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
	o.Dir, o.Format = o.f.dir, catalog.Format(o.format.String())
	if len(args) == 1 {
		o.Package = args[0]
	}
	return nil
}

func (o *catalogInitOptions) run(context.Context) error {
	if err := catalog.Init(o.InitOptions); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.streams.Out, "initialized the package in %s\n", o.Dir)
	return err
}

// catalogAddOptions are catalog add's flags and arguments.
type catalogAddOptions struct {
	catalog.AddOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	scope   *enumFlag
	output  *enumFlag
}

func newCatalogAddCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogAddOptions{f: f, streams: streams, scope: newEnumFlag(catalog.ChannelScopes[0], catalog.ChannelScopes...), output: outputFlag()}
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
		o.Scope = catalog.ChannelScope(s)
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
	res, err := catalog.Add(ctx, o.AddOptions)
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
	catalog.RemoveOptions
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

func (o *catalogRemoveOptions) run(context.Context) error {
	name, err := catalog.Remove(o.RemoveOptions)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "removed %s from package %s\n", name, o.Package)
	return err
}

// catalogDeprecateOptions are catalog deprecate's flags and arguments.
type catalogDeprecateOptions struct {
	catalog.DeprecateOptions
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

func (o *catalogDeprecateOptions) run(context.Context) error {
	if err := catalog.Deprecate(o.DeprecateOptions); err != nil {
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

// catalogRenderOptions are catalog render's flags and arguments.
type catalogRenderOptions struct {
	catalog.RenderOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newCatalogRenderCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogRenderOptions{f: f, streams: streams, output: newEnumFlag(string(catalog.FormatYAML), catalog.Formats...)}
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
	o.Dir, o.Format, o.Packages = o.f.dir, catalog.Format(o.output.String()), args
	return nil
}

func (o *catalogRenderOptions) run(ctx context.Context) error {
	return catalog.Render(ctx, o.streams.Out, o.RenderOptions)
}

// catalogValidateOptions are catalog validate's flags.
type catalogValidateOptions struct {
	catalog.ValidateOptions
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

func (o *catalogValidateOptions) complete(*cobra.Command, []string) error {
	o.Dir = o.f.dir
	return nil
}

func (o *catalogValidateOptions) run(ctx context.Context) error {
	if err := catalog.Validate(ctx, o.ValidateOptions); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.streams.Out, "catalog %s is valid\n", o.Dir)
	return err
}

// catalogGraphOptions are catalog graph's flags and arguments.
type catalogGraphOptions struct {
	catalog.GraphOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	format  *enumFlag
}

func newCatalogGraphCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogGraphOptions{f: f, streams: streams, format: newEnumFlag(catalog.GraphMermaid, catalog.GraphMermaid, catalog.GraphSVG)}
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
	o.Dir, o.Packages, o.Format = o.f.dir, args, o.format.String()
	return nil
}

func (o *catalogGraphOptions) run(ctx context.Context) error {
	return catalog.Graph(ctx, o.streams.Out, o.GraphOptions)
}

// serveOptions are catalog serve's flags and arguments.
type serveOptions struct {
	catalog.ServeOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	port    int
	verbose bool
	// grpc serves the registry gRPC API; http, when set, is the address of
	// catalogd's HTTP API, served as https unless plainHTTP, with metas.
	grpc              bool
	http              string
	plainHTTP, metas  bool
	tlsCert, tlsKey   string
	httpOnlyFlagsUsed []string
}

func newCatalogServeCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &serveOptions{ServeOptions: catalog.ServeOptions{Address: catalog.DefaultServeAddress}, f: f, streams: streams, grpc: true, metas: true}
	cmd := &cobra.Command{
		Use:   "serve [DIR|IMAGE]",
		Short: "Serve OLM's registry gRPC API, and catalogd's HTTP API (OLM v1), for a catalog directory or image (on loopback by default)",
		Long: `Serves the catalog the way ` + "`opm serve`" + ` does: api.Registry, grpc health and
reflection. Point a CatalogSource with spec.sourceType grpc and spec.address
HOST:PORT at it. An argument that is not a directory is taken as a catalog
image, pulled with the docker credentials. Stop with Ctrl-C.

With --http, it also answers the HTTP API catalogd (OLM v1) serves each
ClusterCatalog's content on, with the same URL layout, bodies and headers:
/catalogs/NAME/api/v1/all (the catalog as JSON Lines) and
/catalogs/NAME/api/v1/metas?schema=&package=&name= (the metas they select),
over HTTPS with a certificate generated at start (its file is printed, for
curl --cacert) or given with --tls-cert and --tls-key, or over plain HTTP.
NAME is the ClusterCatalog's name: by default the image repository's last
element or the directory's name. catalogd v1.2.0 serves the metas endpoint
only with --feature-gates=APIV1MetasHandler=true; --metas=false answers as
it does without. With --grpc=false, the catalog is read as catalogd reads
it, without operator-registry's validation (run catalog validate for that).`,
		Example: `  chartpilot catalog serve catalog
  chartpilot catalog serve catalog --http 127.0.0.1:8443
  chartpilot catalog serve registry.local:5000/me/my-catalog:v0.2.0 --grpc=false --http ` + httpapi.DefaultAddress + ` --plain-http
  curl http://` + httpapi.DefaultAddress + `/catalogs/my-catalog/api/v1/metas?schema=olm.channel`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Procs, "procs", 1, "threads running Go code (GOMAXPROCS) once the catalog is loaded, which uses every CPU; 0 keeps the default (GOMAXPROCS in the environment is kept unless --procs is given)")
	fl.StringVar(&o.Address, "address", o.Address, "host:port to listen on")
	fl.IntVar(&o.port, "port", 0, "port to listen on, overriding the port of --address")
	fl.BoolVar(&o.verbose, "verbose", false, "log the catalog load (sizes, durations), and each HTTP request, to stderr")
	fl.DurationVar(&o.ShutdownGrace, "shutdown-grace", catalog.DefaultShutdownGrace, "on SIGTERM or Ctrl-C, how long calls in flight may take to finish before they are cut off")
	fl.BoolVar(&o.grpc, "grpc", o.grpc, "serve OLM's registry gRPC API on --address; --grpc=false serves only --http")
	fl.StringVar(&o.http, "http", "", "also serve catalogd's HTTP API (OLM v1) on `ADDRESS` (host:port), e.g. "+httpapi.DefaultAddress)
	fl.StringVar(&o.CatalogName, "catalog-name", "", "the catalog's NAME in the HTTP API's URLs, as a ClusterCatalog's (default: the image repository's last element or the directory's name)")
	fl.BoolVar(&o.plainHTTP, "plain-http", false, "serve the HTTP API over plain HTTP instead of HTTPS")
	fl.StringVar(&o.tlsCert, "tls-cert", "", "the HTTP API's serving certificate (PEM), as catalogd's --tls-cert (default: one generated at start)")
	fl.StringVar(&o.tlsKey, "tls-key", "", "the key of --tls-cert (PEM)")
	fl.BoolVar(&o.metas, "metas", o.metas, "serve the HTTP API's metas endpoint (catalogd's APIV1MetasHandler feature gate)")
	return cmd
}

func (o *serveOptions) complete(cmd *cobra.Command, args []string) error {
	o.Dir = o.f.dir
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
	o.Procs = catalog.ResolveProcs(o.Procs, cmd.Flags().Changed("procs"), os.Getenv)
	o.NoGRPC = !o.grpc
	for _, name := range []string{"catalog-name", "plain-http", "tls-cert", "tls-key", "metas"} {
		if cmd.Flags().Changed(name) {
			o.httpOnlyFlagsUsed = append(o.httpOnlyFlagsUsed, "--"+name)
		}
	}
	if o.http != "" {
		o.HTTP = &httpapi.ServerOptions{
			Address:        o.http,
			PlainHTTP:      o.plainHTTP,
			CertFile:       o.tlsCert,
			KeyFile:        o.tlsKey,
			HandlerOptions: httpapi.HandlerOptions{DisableMetas: !o.metas},
		}
	}
	return nil
}

func (o *serveOptions) validate() error {
	switch {
	case o.http == "" && !o.grpc:
		return errors.New("--grpc=false leaves nothing to serve: add --http HOST:PORT")
	case o.http == "" && len(o.httpOnlyFlagsUsed) > 0:
		return fmt.Errorf("%s configure the HTTP API: add --http HOST:PORT", strings.Join(o.httpOnlyFlagsUsed, ", "))
	case (o.tlsCert == "") != (o.tlsKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case o.plainHTTP && o.tlsCert != "":
		return errors.New("--plain-http serves no certificate: leave out --tls-cert and --tls-key")
	}
	return nil
}

func (o *serveOptions) run(ctx context.Context) error {
	ctx, cancel := runcmd.SignalContext(ctx)
	defer cancel()
	what := cmp.Or(o.Image, o.Dir)
	return catalog.Serve(ctx, o.ServeOptions, func(s *catalog.Server) {
		out := o.streams.Out
		if s.Addr() != "" {
			fmt.Fprintf(out, "serving catalog %s on %s\n", what, s.Addr())
		}
		if h := s.HTTP(); h != nil {
			fmt.Fprintf(out, "serving catalog %s as %q over catalogd's HTTP API: %s/%s\n", what, s.CatalogName, h.BaseURL(s.CatalogName), httpapi.AllPath)
			if f := h.CertFile(); f != "" && o.tlsCert == "" {
				fmt.Fprintf(out, "  its certificate, generated for this run: %s (curl --cacert %s)\n", f, f)
			}
		}
	})
}

// addImageFlags adds the flags of the commands that build a catalog image.
func addImageFlags(cmd *cobra.Command, opts *catalog.ImageOptions) {
	cmd.Flags().StringVar(&opts.Base, "base", "", "base image, e.g. "+catalog.DefaultBaseImage+" for an image that serves itself (default: none, the image only carries the catalog)")
	cmd.Flags().StringToStringVar(&opts.Labels, "label", nil, "extra image labels, key=value")
	cmd.Flags().BoolVar(&opts.NoCache, "no-cache", false, "leave out the pre-built serving cache")
}

// catalogBuildOptions are catalog build's flags.
type catalogBuildOptions struct {
	catalog.BuildOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	store   storeFlag
	// image, ociLayout and push are where the image goes; tag is its tag
	// in the OCI layout.
	image, ociLayout, tag, push string
}

func newCatalogBuildCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogBuildOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the catalog image without a container engine: kept for `image push`, into an OCI layout and/or a registry",
		Long: `Builds the catalog image opm's catalog.Dockerfile would: the catalog under
/configs, the serving cache pre-built under /tmp/cache, and the label
` + catalog.ConfigsLabel + `=/configs. No Docker daemon is
needed. The catalog's layer is reproducible; the serving cache's is not (its
database seeds its hash index at random): --no-cache gives the same digest
for the same catalog.

With --bundles, the bundle images are published in the catalog first (pulled,
image-based, placed by semver; a package the catalog lacks is initialized from
its first bundle; a bundle already there is replaced), as operator-sdk's
catalog-build does with opm.`,
		Example: `  chartpilot catalog build --image quay.io/me/my-operator-catalog:v0.2.0 --bundles quay.io/me/my-operator-bundle:v0.2.0
  chartpilot image push quay.io/me/my-operator-catalog:v0.2.0
  chartpilot catalog build --oci-layout build/catalog-oci --tag v0.2.0
  chartpilot catalog build --push quay.io/me/my-operator-catalog:v0.2.0`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	addImageFlags(cmd, &o.ImageOptions)
	o.store.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.image, "image", "", "keep the image in the image store under `REF`, for chartpilot image push")
	fl.StringSliceVar(&o.Bundles, "bundles", nil, "bundle images to publish in the catalog before building")
	fl.BoolVar(&o.AllowUnsafeAPIChanges, "allow-unsafe-api-changes", false, "publish --bundles even when their CRDs break the CRs of the bundles they upgrade")
	fl.StringVar(&o.ociLayout, "oci-layout", "", "write the image into this OCI image layout directory")
	fl.StringVar(&o.tag, "tag", "latest", "the tag recorded in the OCI layout")
	fl.StringVar(&o.push, "push", "", "push the image to this reference")
	return cmd
}

func (o *catalogBuildOptions) complete(*cobra.Command, []string) error {
	o.Dir = o.f.dir
	return nil
}

func (o *catalogBuildOptions) validate() error {
	if o.ociLayout == "" && o.push == "" && o.image == "" {
		return errors.New("say where the image goes: --image REF (kept for chartpilot image push), --oci-layout DIR and/or --push REF")
	}
	return nil
}

func (o *catalogBuildOptions) run(ctx context.Context) error {
	res, err := catalog.Build(ctx, o.BuildOptions)
	if err != nil {
		return err
	}
	out := o.streams.Out
	for i, p := range res.Published {
		fmt.Fprintf(out, "published %s (%s) in package %s\n", p.Bundle, o.Bundles[i], p.Package)
	}
	if o.image != "" {
		if err := keepImage(out, &o.store, res.Image, o.image, ""); err != nil {
			return err
		}
	}
	if o.ociLayout != "" {
		if err := catalog.WriteOCILayout(res.Image, o.ociLayout, o.tag); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s to OCI layout %s\n", res.Digest, o.ociLayout)
	}
	if o.push != "" {
		if _, err := catalog.PushImage(ctx, res.Image, o.push); err != nil {
			return err
		}
		fmt.Fprintf(out, "pushed %s@%s\n", o.push, res.Digest)
	}
	return nil
}

// catalogPushOptions are catalog push's flags and arguments.
type catalogPushOptions struct {
	catalog.ImageOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	ref     string
}

func newCatalogPushCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogPushOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:     "push IMAGE",
		Short:   "Build the catalog image without a container engine and push it (docker credentials)",
		Example: `  chartpilot catalog push 127.0.0.1:5000/my-operator-catalog:v0.2.0 --dir catalog`,
		Args:    cobra.ExactArgs(1),
		RunE:    runOptions(o),
	}
	addImageFlags(cmd, &o.ImageOptions)
	return cmd
}

func (o *catalogPushOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir, o.ref = o.f.dir, args[0]
	return nil
}

func (o *catalogPushOptions) run(ctx context.Context) error {
	res, err := catalog.Build(ctx, catalog.BuildOptions{ImageOptions: o.ImageOptions})
	if err != nil {
		return err
	}
	if _, err := catalog.PushImage(ctx, res.Image, o.ref); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "pushed %s@%s\n", o.ref, res.Digest)
	return err
}

// catalogDockerfileOptions are catalog dockerfile's flags.
type catalogDockerfileOptions struct {
	catalog.DockerfileOptions
	f       *catalogFlags
	streams genericiooptions.IOStreams
	// file is where it goes; "-" is standard output.
	file string
}

func newCatalogDockerfileCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogDockerfileOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "dockerfile",
		Short: "Write a catalog.Dockerfile for docker and podman users (the image build does the same without them)",
		Example: `  chartpilot catalog dockerfile --dir build/catalog
  chartpilot catalog dockerfile --dir catalog -f - | docker build -f - .`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&o.BaseImage, "base", catalog.DefaultBaseImage, "the opm image to build from")
	cmd.Flags().StringVarP(&o.file, "file", "f", "catalog.Dockerfile", "where to write it; - for standard output")
	return cmd
}

func (o *catalogDockerfileOptions) complete(*cobra.Command, []string) error {
	o.CatalogDir = o.f.dir
	return nil
}

func (o *catalogDockerfileOptions) run(context.Context) error {
	var buf bytes.Buffer
	if err := catalog.WriteDockerfile(&buf, o.DockerfileOptions); err != nil {
		return err
	}
	if o.file == "-" {
		_, err := o.streams.Out.Write(buf.Bytes())
		return err
	}
	if err := atomicfile.WriteFile(o.file, buf.Bytes(), 0o644); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.streams.Out, "wrote %s\n", o.file)
	return err
}
