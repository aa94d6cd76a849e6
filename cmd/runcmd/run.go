package runcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/reconciler"
	"github.com/chartpilot/chartpilot/operator/releasemetrics"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// GCPercent is the operator's GOGC unless the environment sets one. Its heap
// is nearly all informer caches: long-lived, and as large as the objects it
// watches. Go's default, 100, lets garbage grow as large again before a
// collection, so that resident memory is about twice the caches; 50 keeps
// that headroom to half of them, for more frequent collections while
// releases are installed (a reconcile of a release in sync allocates
// little). Measured with the benchmarks of operator/e2e: see docs/runtime.md.
const GCPercent = 50

// runOptions are run's flags.
type runOptions struct {
	operator.Options
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	watchesFile string
	zapOpts     zap.Options
}

// New returns the run command, reaching the cluster through configFlags,
// which it adds to its own flags.
func New(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &runOptions{streams: streams, configFlags: configFlags}
	opts := &o.Options
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the Helm operator: reconcile the custom resources of watches.yaml into Helm releases",
		Long: `Run the Helm operator of a project: each custom resource of a kind listed in
watches.yaml (operator-sdk's format) becomes a Helm release of its chart, with
the CR's spec as values. WATCH_NAMESPACE (a comma-separated list, as OLM sets
it) limits the namespaces; empty means all.`,
		Example: `  chartpilot run --watches-file watches.yaml                  # against the cluster of $KUBECONFIG
  WATCH_NAMESPACE=demo chartpilot run --kubeconfig ~/.kube/config --metrics-secure=false
  chartpilot-operator run --watches-file=/opt/helm/watches.yaml --leader-elect   # as the operator image does`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	AddKubeFlags(cmd.Flags(), configFlags)
	fl := cmd.Flags()
	fl.StringVar(&o.watchesFile, "watches-file", "./watches.yaml", "path to the watches file")
	fl.BoolVar(&opts.LeaderElection, "leader-elect", false, "elect a leader with a Lease so that replicas stand by")
	fl.StringVar(&opts.LeaderElectionID, "leader-election-id", "", "name of the leader election Lease (default chartpilot-helm-operator)")
	fl.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's)")
	fl.DurationVar(&opts.Lease.LeaseDuration, "leader-elect-lease-duration", operator.DefaultLeaseDuration, "how long a standby waits, from its last sight of the leader's renewal, before it takes over: after a leader's crash, reconciling resumes within this plus 1-5 retry periods")
	fl.DurationVar(&opts.Lease.RenewDeadline, "leader-elect-renew-deadline", operator.DefaultRenewDeadline, "how long the leader keeps trying to renew its Lease before it steps down (it stops reconciling and stands again once the API server answers); shorter than the lease duration")
	fl.DurationVar(&opts.Lease.RetryPeriod, "leader-elect-retry-period", operator.DefaultRetryPeriod, "interval of the leader's renewals and of the standbys' attempts to take over")
	fl.StringVar(&opts.Shard, "shard", "", "reconcile only the custom resources labelled "+operator.ShardLabel+"=SHARD, with a leader election Lease of the shard's own; without it, those not labelled for a shard")
	fl.IntVar(&opts.MaxConcurrentReconciles, "max-concurrent-reconciles", 1, "custom resources of one kind reconciled at once, unless watches.yaml sets it")
	fl.DurationVar(&opts.ReconcilePeriod, "reconcile-period", time.Minute, "re-check each custom resource this often, unless watches.yaml or an annotation sets it")
	fl.DurationVar(&opts.Backoff.Initial, "failure-backoff", reconciler.DefaultBackoffInitial, "wait after a release's first failure before trying the same chart and values again; it doubles with each failure")
	fl.DurationVar(&opts.Backoff.Max, "failure-backoff-max", reconciler.DefaultBackoffMax, "longest wait between attempts of a release that keeps failing; a change to its custom resource or chart tries again at once")
	fl.IntVar(&opts.DriftLimit.Repairs, "drift-repairs", reconciler.DefaultDriftRepairs, "drift repairs of one release within --drift-window after which the operator stops repairing it (something else keeps changing its objects) until its custom resource changes; negative: never stop")
	fl.DurationVar(&opts.DriftLimit.Window, "drift-window", reconciler.DefaultDriftWindow, "the window --drift-repairs counts repairs in")
	fl.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", operator.DefaultSecureMetricsAddress, `address of the Prometheus metrics endpoint; "0" disables it (default `+operator.DefaultInsecureMetricsAddress+` with --metrics-secure=false)`)
	fl.BoolVar(&opts.Metrics.Secure, "metrics-secure", true, "serve the metrics over HTTPS to scrapers whose ServiceAccount token the API server accepts and who may get /metrics (the metrics-reader ClusterRole); false serves plain HTTP to anyone who reaches the address, for local development")
	fl.StringVar(&opts.Metrics.CertDir, "metrics-cert-path", "", "directory holding the metrics endpoint's certificate and key (cert-manager's Secret, mounted), reloaded when they change; empty: a self-signed certificate")
	fl.StringVar(&opts.Metrics.CertName, "metrics-cert-name", "tls.crt", "file name of the metrics certificate in --metrics-cert-path")
	fl.StringVar(&opts.Metrics.KeyName, "metrics-cert-key", "tls.key", "file name of the metrics key in --metrics-cert-path")
	fl.BoolVar(&opts.Metrics.HTTP2, "enable-http2", false, "let scrapers of the metrics endpoint speak HTTP/2 (off: HTTP/2's stream reset attacks cost a server more, and a scrape gains nothing)")
	fl.IntVar(&opts.ReleaseSeriesLimit, "metrics-release-series-limit", releasemetrics.DefaultSeriesLimit, "custom resources whose per-release series the metrics hold: above it, only those that need attention (failed, not ready, drifted), this many at most, beside the series per kind; -1 exports every custom resource's (about 2 KiB of each scrape per custom resource)")
	fl.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "127.0.0.1:8081", `address of /healthz and /readyz; "0" disables them`)
	fl.StringVar(&opts.PprofBindAddress, "pprof-bind-address", "0", `address of Go's profiles (/debug/pprof/); "0" disables them`)
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zapOpts.BindFlags(zapFlags)
	fl.AddGoFlagSet(zapFlags)
	return cmd
}

// Complete loads watches.yaml and reaches the cluster.
func (o *runOptions) Complete(cmd *cobra.Command, _ []string) error {
	log := setLogger(&o.zapOpts, o.streams.ErrOut)
	ws, err := watches.Load(o.watchesFile, watches.Options{})
	if err != nil {
		return err
	}
	cfg, err := KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	o.MetricsBindAddress = metricsAddress(cmd.Flags())
	o.Watches = ws
	o.Config = cfg
	o.Namespaces = operator.ParseNamespaces(os.Getenv("WATCH_NAMESPACE"))
	o.Log = log.WithName("chartpilot")
	return nil
}

// setLogger returns the operator's logger, writing to w, capped at the
// operator's most verbose level, and makes it controller-runtime's global
// logger too: what logs through that (controller-runtime's own packages, a
// context that carries no logger) would otherwise escape the cap, and from
// V(7) on client-go writes request bodies, release Secrets included.
func setLogger(zapOpts *zap.Options, w io.Writer) logr.Logger {
	log := operator.CapVerbosity(zap.New(zap.UseFlagOptions(zapOpts), zap.WriteTo(w)))
	ctrl.SetLogger(log)
	return log
}

// Validate leaves the flags to operator.Run, which checks them together.
func (o *runOptions) Validate() error { return nil }

// Run runs the operator until ctx ends.
func (o *runOptions) Run(ctx context.Context) error {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
	return operator.Run(ctx, o.Options)
}

// metricsAddress is --metrics-bind-address when given, else "": the
// default of the serving --metrics-secure chose (see operator.Options).
func metricsAddress(fl *pflag.FlagSet) string {
	if !fl.Changed("metrics-bind-address") {
		return ""
	}
	addr, _ := fl.GetString("metrics-bind-address")
	return addr
}

// SignalContext is cancelled by Ctrl-C or SIGTERM (what the kubelet sends),
// so that a long build or wait, or the operator, stops cleanly.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}
