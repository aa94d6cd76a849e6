package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/bundle"
	"github.com/chartpilot/chartpilot/cmd/version"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// storeFlag is the --store flag of the commands that build or push images.
type storeFlag struct{ dir string }

func (s *storeFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.dir, "store", "", "the OCI layout where built images are kept until pushed (default $XDG_CACHE_HOME/chartpilot/images)")
}

func (s *storeFlag) store() (ociimage.Store, error) {
	if s.dir != "" {
		return ociimage.Store{Dir: s.dir}, nil
	}
	dir, err := ociimage.DefaultStoreDir()
	return ociimage.Store{Dir: dir}, err
}

// keepImage stores a built image under its tag and writes it to --output:
// a docker-loadable tarball for a .tar file, else an OCI layout directory.
func keepImage(out io.Writer, s *storeFlag, t remote.Taggable, tag, output string) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	if err := st.Put(t, tag); err != nil {
		return err
	}
	var digest v1.Hash
	switch t := t.(type) {
	case v1.Image:
		digest, err = t.Digest()
	case v1.ImageIndex:
		digest, err = t.Digest()
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "built %s@%s (kept in %s; push with `chartpilot image push %s`)\n", tag, digest, st.Dir, tag)
	switch {
	case output == "":
	case strings.HasSuffix(output, ".tar"):
		img, ok := t.(v1.Image)
		if !ok {
			return fmt.Errorf("--output %s: a tarball holds one platform's image; use an OCI layout directory for several", output)
		}
		if err := ociimage.WriteTarball(img, tag, output); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s\n", output)
	default:
		if err := ociimage.WriteOCILayout(t, output, tag); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote OCI layout %s\n", output)
	}
	return nil
}

// bundleBuildOptions are bundle build's flags and arguments.
type bundleBuildOptions struct {
	streams     genericiooptions.IOStreams
	store       storeFlag
	tag, output string
	dir         string
}

func newBundleBuildCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &bundleBuildOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "build --tag REF [BUNDLE_DIR]",
		Short: "Build the bundle image without a container engine (what `make bundle-build` runs)",
		Long: `Builds the image bundle.Dockerfile describes, without Docker: manifests/,
metadata/ and tests/ of the bundle (default ./bundle) at the image root, on an
empty base, labelled with metadata/annotations.yaml. The bundle is validated
first. The image is kept in the image store under --tag for ` + "`chartpilot image push`" + `,
and written to --output when given. The same bundle gives the same digest.`,
		Example: `  chartpilot bundle build --tag quay.io/me/op-bundle:v0.1.0
  chartpilot bundle build --tag quay.io/me/op-bundle:v0.1.0 --output bundle-oci ./bundle`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	o.store.add(cmd)
	cmd.Flags().StringVar(&o.tag, "tag", "", "the image reference (required)")
	cmd.Flags().StringVar(&o.output, "output", "", "also write the image to an OCI layout directory, or a docker-loadable tarball (*.tar)")
	_ = cmd.MarkFlagRequired("tag")
	return cmd
}

func (o *bundleBuildOptions) complete(_ *cobra.Command, args []string) error {
	o.dir = bundle.DefaultOutputDir
	if len(args) == 1 {
		o.dir = args[0]
	}
	return nil
}

func (o *bundleBuildOptions) run(context.Context) error {
	img, err := bundle.BuildImage(o.dir)
	if err != nil {
		return err
	}
	return keepImage(o.streams.Out, &o.store, img, o.tag, o.output)
}

// pushOptions are push's flags and arguments.
type pushOptions struct {
	streams genericiooptions.IOStreams
	store   storeFlag
	ref     string
}

// newPushCommand pushes an image kept in the store; bundle push and image
// push are the same command under two parents (parent names it).
func newPushCommand(streams genericiooptions.IOStreams, parent, what string) *cobra.Command {
	o := &pushOptions{streams: streams}
	cmd := &cobra.Command{
		Use:   "push REF",
		Short: "Push the " + what + " image built under REF to its registry (docker credentials)",
		Long: `Pushes the image (or multi-platform index) that a build kept in the image store
under REF, with the credentials of ~/.docker/config.json and its helpers.
Registries on loopback and private addresses are spoken to over plain HTTP.`,
		Example: "  chartpilot " + parent + " build --tag 127.0.0.1:5000/op:v0.1.0\n  chartpilot " + parent + " push 127.0.0.1:5000/op:v0.1.0",
		Args:    cobra.ExactArgs(1),
		RunE:    runOptions(o),
	}
	o.store.add(cmd)
	return cmd
}

func (o *pushOptions) complete(_ *cobra.Command, args []string) error {
	o.ref = args[0]
	return nil
}

func (o *pushOptions) run(ctx context.Context) error {
	st, err := o.store.store()
	if err != nil {
		return err
	}
	digest, err := st.Push(ctx, o.ref)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.streams.Out, "pushed %s@%s\n", o.ref, digest)
	return err
}

func newImageCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and push the operator image without a container engine",
		Example: `  chartpilot image build --tag quay.io/me/op:v0.1.0
  chartpilot image push quay.io/me/op:v0.1.0`,
	}
	cmd.AddCommand(newImageBuildCommand(streams), newPushCommand(streams, "image", "operator, bundle or catalog"))
	return cmd
}

// imageBuildOptions are image build's flags and arguments.
type imageBuildOptions struct {
	bundle.OperatorImageOptions
	streams     genericiooptions.IOStreams
	store       storeFlag
	tag, output string
	platforms   []string
	labels      map[string]string
}

func newImageBuildCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &imageBuildOptions{streams: streams}
	opts := &o.OperatorImageOptions
	cmd := &cobra.Command{
		Use:   "build --tag REF [PROJECT_DIR]",
		Short: "Build the operator image without a container engine (what `make docker-build` runs)",
		Long: `Builds the operator image: a static chartpilot-operator binary (the Helm
operator runtime alone), the project's watches.yaml and helm-charts/ under
/opt/helm on an empty base, running as user 65532 with the entrypoint
` + "`chartpilot-operator run --watches-file=/opt/helm/watches.yaml`" + `, as the
scaffolded Dockerfile. Several --platform values make a multi-platform index.

The binary for each platform is, in order: --binary PLATFORM=FILE; the static
chartpilot-operator next to this chartpilot (` + "`make build`" + ` puts it in bin/) for
this machine's platform; else one cross-built with ` + "`go build`" + ` (CGO_ENABLED=0,
-trimpath) from --chartpilot-source, the chartpilot module's directory
($CHARTPILOT_SOURCE, else the source tree a development build of this chartpilot
came from). The same inputs give the same digest. The image is kept in the image store under --tag.`,
		Example: `  chartpilot image build --tag quay.io/me/op:v0.1.0
  chartpilot image build --tag quay.io/me/op:v0.1.0 --platform linux/amd64,linux/arm64 --chartpilot-source ~/src/chartpilot`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	o.store.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&o.tag, "tag", "", "the image reference (required)")
	fl.StringVar(&o.output, "output", "", "also write the image to an OCI layout directory, or a docker-loadable tarball (*.tar)")
	fl.StringSliceVar(&o.platforms, "platform", nil, "platforms to build, os/arch[/variant] (default: this machine's)")
	fl.StringToStringVar(&opts.Binaries, "binary", nil, "a static chartpilot-operator binary per platform, PLATFORM=FILE")
	fl.StringVar(&opts.Source, "chartpilot-source", "", "the chartpilot module directory to cross-build the binary from (default $CHARTPILOT_SOURCE, else the source tree this chartpilot was built from, when it is still there)")
	fl.StringToStringVar(&o.labels, "label", nil, "image labels, key=value")
	_ = cmd.MarkFlagRequired("tag")
	return cmd
}

func (o *imageBuildOptions) complete(_ *cobra.Command, args []string) (err error) {
	o.Dir = "."
	if len(args) == 1 {
		o.Dir = args[0]
	}
	if o.Platforms, err = bundle.ParsePlatforms(o.platforms); err != nil {
		return err
	}
	o.Labels, o.Log = o.labels, o.streams.ErrOut
	if o.Source == "" {
		o.Source = os.Getenv("CHARTPILOT_SOURCE")
	}
	if o.Source == "" {
		o.Source = version.SourceDir()
	}
	return nil
}

func (o *imageBuildOptions) run(ctx context.Context) error {
	t, err := bundle.BuildOperatorImage(ctx, o.OperatorImageOptions)
	if err != nil {
		return err
	}
	return keepImage(o.streams.Out, &o.store, t, o.tag, o.output)
}
