package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cmd/demo"
)

// demoOptions are demo's flags.
type demoOptions struct {
	demo.Options
	olm *enumFlag
}

func newDemoCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &demoOptions{Options: demo.Options{Out: streams.Out},
		olm: newEnumFlag("auto", "auto", string(cluster.OLMv0), string(cluster.OLMv1), string(cluster.OLMBoth))}
	opts := &o.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole journey on a local cluster with OLM: chart to operator, installed and upgraded through a Subscription and a ClusterExtension",
		Long: `Runs what an operator author does, with the example hello chart, on a local
cluster with real OLM that it starts and stops:

  chartpilot init, make bundle, scorecard, a catalog served over OLM's
  registry API, a Subscription created with kubectl, the operator running as
  the ServiceAccount OLM created, a custom resource reconciled into a Helm
  release; then version 0.2.0 published, OLM upgrading the CSV and the
  operator upgrading the release; then everything removed.

Then (--olm=both, the default) the journey goes on through OLM v1 in the
same cluster with what it built: a ClusterCatalog of the v0.1.0 catalog
image, a ClusterExtension installed with chartpilot olm v1 install as an
installer ServiceAccount whose RBAC is derived from the bundle, the custom
resource reconciled, chartpilot olm v1 upgrade to the v0.2.0 catalog image
upgrading the release in place, and chartpilot olm v1 uninstall leaving
nothing. On a kwok node the bundle and catalog images go to a registry the
demo runs on loopback. --olm=v1 takes OLM v1's journey alone.

Each command's output is kept in DIR/logs. The run ends with a summary of
each step's time. It is idempotent and leaves nothing running.`,
		Example: `  chartpilot demo                        # what make demo runs
  chartpilot demo --node kwok            # pods simulated, bundles inline: no root needed
  chartpilot demo --olm=v1               # OLM v1's journey alone
  chartpilot demo --use-cluster "$(chartpilot cluster kubeconfig --path)"`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Dir, "dir", "", "where the project, catalog, logs and the local cluster's state go (default $XDG_CACHE_HOME/chartpilot/demo)")
	fl.StringVar(&opts.Kubeconfig, "use-cluster", "", "kubeconfig of a running local cluster with OLM to use instead of starting one")
	fl.StringVar(&opts.Namespace, "namespace-name", "hello-demo", "namespace the operator is installed in")
	fl.DurationVar(&opts.Timeout, "timeout", opts.Timeout, "bound of each wait (default 3m)")
	fl.StringVar((*string)(&opts.Node), "node", string(cluster.NodeAuto), "the started cluster's node: real (the journey goes through images: operator, bundle and catalog images pulled and run by OLM), kwok (pods simulated, bundles inline) or auto (real where this host can run one)")
	fl.Var(o.olm, "olm", "the OLM the journey goes through: v0 (a Subscription), v1 (a ClusterExtension), both (v0 then v1 in the same cluster, with what v0's built) or auto (both on the cluster the demo starts, v0 with --use-cluster)")
	return cmd
}

func (o *demoOptions) complete(*cobra.Command, []string) error {
	// The demo's clients log through controller-runtime's logger, with
	// nothing the screen needs; unset, it prints a stack trace once the
	// demo has run 30 s, which the cluster's start may take.
	ctrl.SetLogger(logr.Discard())
	if o.Dir == "" {
		o.Dir = defaultDemoDir()
	}
	if v := o.olm.String(); v != "auto" {
		o.OLM = cluster.OLMVersions(v)
	}
	return nil
}

// defaultDemoDir is chartpilot/demo in the user's cache directory.
func defaultDemoDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "chartpilot", "demo")
	}
	return filepath.Join(os.TempDir(), "chartpilot-demo")
}

func (o *demoOptions) run(ctx context.Context) error {
	_, err := demo.Run(ctx, o.Options)
	return err
}
