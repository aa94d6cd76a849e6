package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
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
