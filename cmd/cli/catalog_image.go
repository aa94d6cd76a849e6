package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/ociimage"
)

// addImageFlags adds the flags of the commands that build a catalog image.
func addImageFlags(cmd *cobra.Command, opts *oci.ImageOptions) {
	cmd.Flags().StringVar(&opts.Base, "base", "", "base image, e.g. "+oci.DefaultBaseImage+" for an image that serves itself (default: none, the image only carries the catalog)")
	cmd.Flags().StringToStringVar(&opts.Labels, "label", nil, "extra image labels, key=value")
	cmd.Flags().BoolVar(&opts.NoCache, "no-cache", false, "leave out the pre-built serving cache")
}

// catalogBuildOptions are catalog build's flags.
type catalogBuildOptions struct {
	oci.BuildOptions
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
` + oci.ConfigsLabel + `=/configs. No Docker daemon is
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

// complete takes catalog push's argument as --push.
func (o *catalogBuildOptions) complete(_ *cobra.Command, args []string) error {
	o.Dir = o.f.dir
	if len(args) == 1 {
		o.push = args[0]
	}
	return nil
}

func (o *catalogBuildOptions) validate() error {
	if o.ociLayout == "" && o.push == "" && o.image == "" {
		return errors.New("say where the image goes: --image REF (kept for chartpilot image push), --oci-layout DIR and/or --push REF")
	}
	return nil
}

func (o *catalogBuildOptions) run(ctx context.Context) error {
	res, err := oci.Build(ctx, o.BuildOptions)
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
		if err := ociimage.WriteOCILayout(res.Image, o.ociLayout, o.tag); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s to OCI layout %s\n", res.Digest, o.ociLayout)
	}
	if o.push != "" {
		if _, err := ociimage.Push(ctx, res.Image, o.push); err != nil {
			return err
		}
		fmt.Fprintf(out, "pushed %s@%s\n", o.push, res.Digest)
	}
	return nil
}

// newCatalogPushCommand is catalog build --push IMAGE, without bundles or
// other destinations.
func newCatalogPushCommand(streams genericiooptions.IOStreams, f *catalogFlags) *cobra.Command {
	o := &catalogBuildOptions{f: f, streams: streams}
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

// catalogDockerfileOptions are catalog dockerfile's flags.
type catalogDockerfileOptions struct {
	oci.DockerfileOptions
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
	cmd.Flags().StringVar(&o.BaseImage, "base", oci.DefaultBaseImage, "the opm image to build from")
	cmd.Flags().StringVarP(&o.file, "file", "f", "catalog.Dockerfile", "where to write it; - for standard output")
	return cmd
}

func (o *catalogDockerfileOptions) complete(*cobra.Command, []string) error {
	o.CatalogDir = o.f.dir
	return nil
}

func (o *catalogDockerfileOptions) run(context.Context) error {
	var buf bytes.Buffer
	if err := oci.WriteDockerfile(&buf, o.DockerfileOptions); err != nil {
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
