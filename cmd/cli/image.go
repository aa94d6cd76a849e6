package cli

import (
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

func newBundleBuildCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var s storeFlag
	var tag, output string
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
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := bundle.DefaultOutputDir
			if len(args) == 1 {
				dir = args[0]
			}
			img, err := bundle.BuildImage(dir)
			if err != nil {
				return err
			}
			return keepImage(streams.Out, &s, img, tag, output)
		},
	}
	s.add(cmd)
	cmd.Flags().StringVar(&tag, "tag", "", "the image reference (required)")
	cmd.Flags().StringVar(&output, "output", "", "also write the image to an OCI layout directory, or a docker-loadable tarball (*.tar)")
	_ = cmd.MarkFlagRequired("tag")
	return cmd
}

// newPushCommand pushes an image kept in the store; bundle push and image
// push are the same command under two names.
func newPushCommand(streams genericiooptions.IOStreams, what string) *cobra.Command {
	var s storeFlag
	cmd := &cobra.Command{
		Use:   "push REF",
		Short: "Push the " + what + " image built under REF to its registry (docker credentials)",
		Long: `Pushes the image (or multi-platform index) that a build kept in the image store
under REF, with the credentials of ~/.docker/config.json and its helpers.
Registries on loopback and private addresses are spoken to over plain HTTP.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := s.store()
			if err != nil {
				return err
			}
			digest, err := st.Push(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(streams.Out, "pushed %s@%s\n", args[0], digest)
			return err
		},
	}
	s.add(cmd)
	return cmd
}

func newImageCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build and push the operator image without a container engine",
	}
	cmd.AddCommand(newImageBuildCommand(streams), newPushCommand(streams, "operator, bundle or catalog"))
	return cmd
}

func newImageBuildCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var s storeFlag
	var opts bundle.OperatorImageOptions
	var tag, output string
	var platforms []string
	var labels map[string]string
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
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "."
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			var err error
			if opts.Platforms, err = bundle.ParsePlatforms(platforms); err != nil {
				return err
			}
			opts.Labels, opts.Log = labels, streams.ErrOut
			if opts.Source == "" {
				opts.Source = os.Getenv("CHARTPILOT_SOURCE")
			}
			if opts.Source == "" {
				opts.Source = version.SourceDir()
			}
			t, err := bundle.BuildOperatorImage(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return keepImage(streams.Out, &s, t, tag, output)
		},
	}
	s.add(cmd)
	fl := cmd.Flags()
	fl.StringVar(&tag, "tag", "", "the image reference (required)")
	fl.StringVar(&output, "output", "", "also write the image to an OCI layout directory, or a docker-loadable tarball (*.tar)")
	fl.StringSliceVar(&platforms, "platform", nil, "platforms to build, os/arch[/variant] (default: this machine's)")
	fl.StringToStringVar(&opts.Binaries, "binary", nil, "a static chartpilot-operator binary per platform, PLATFORM=FILE")
	fl.StringVar(&opts.Source, "chartpilot-source", "", "the chartpilot module directory to cross-build the binary from (default $CHARTPILOT_SOURCE, else the source tree this chartpilot was built from, when it is still there)")
	fl.StringToStringVar(&labels, "label", nil, "image labels, key=value")
	_ = cmd.MarkFlagRequired("tag")
	return cmd
}
