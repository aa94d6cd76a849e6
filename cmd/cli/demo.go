package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cmd/demo"
)

// demoOptions are demo's flags.
type demoOptions struct{ demo.Options }

func newDemoCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &demoOptions{demo.Options{Out: streams.Out}}
	opts := &o.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole journey on a local cluster with OLM: chart to operator, installed and upgraded through a Subscription",
		Long: `Runs what an operator author does, with the example hello chart, on a local
cluster with real OLM that it starts and stops:

  chartpilot init, make bundle, scorecard, a catalog served over OLM's
  registry API, a Subscription created with kubectl, the operator running as
  the ServiceAccount OLM created, a custom resource reconciled into a Helm
  release; then version 0.2.0 published, OLM upgrading the CSV and the
  operator upgrading the release; then everything removed.

Each command's output is kept in DIR/logs. The run ends with a summary of
each step's time. It is idempotent and leaves nothing running.`,
		Example: `  chartpilot demo                        # what make demo runs
  chartpilot demo --node kwok            # pods simulated, bundles inline: no root needed
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
	return cmd
}

func (o *demoOptions) complete(*cobra.Command, []string) error {
	if o.Dir == "" {
		o.Dir = defaultDemoDir()
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

func (o *demoOptions) validate() error { return nil }

func (o *demoOptions) run(ctx context.Context) error {
	_, err := demo.Run(ctx, o.Options)
	return err
}
