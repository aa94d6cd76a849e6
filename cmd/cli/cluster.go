package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// clusterFlags are shared by the cluster subcommands.
type clusterFlags struct {
	stateDir string
	cacheDir string
	timeout  time.Duration
}

func (f *clusterFlags) options(out io.Writer) cluster.Options {
	return cluster.Options{StateDir: f.stateDir, CacheDir: f.cacheDir, Out: out, StartTimeout: f.timeout}
}

func (f *clusterFlags) cluster(out io.Writer) (*cluster.Cluster, error) {
	return cluster.New(f.options(out))
}

// running returns the cluster if it has been started (it has a kubeconfig).
func (f *clusterFlags) running(out io.Writer) (*cluster.Cluster, error) {
	c, err := f.cluster(out)
	if err != nil {
		return nil, err
	}
	if _, err := c.RESTConfig(); err != nil {
		return nil, err
	}
	return c, nil
}

func newClusterCommand(streams genericiooptions.IOStreams) *cobra.Command {
	f := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local Kubernetes cluster with real OLM, as processes on loopback",
		Long: `A local cluster made of real processes on 127.0.0.1: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kwok (fake nodes: pods become Running
and Ready without a container runtime) and OLM's olm and catalog operators.
Every binary is built from its Go module on first use and cached; no Docker
engine and no download is needed.`,
	}
	cmd.PersistentFlags().StringVar(&f.stateDir, "state-dir", "", "directory holding the cluster's state (default $XDG_STATE_HOME/chartpilot/cluster)")
	cmd.PersistentFlags().StringVar(&f.cacheDir, "cache-dir", "", "directory caching the built component binaries (default $XDG_CACHE_HOME/chartpilot/toolchain)")
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 90*time.Second, "how long each component may take to become healthy")
	cmd.AddCommand(
		newClusterUpCommand(streams, f),
		newClusterDownCommand(streams, f),
		newClusterStatusCommand(streams, f),
		newClusterKubeconfigCommand(streams, f),
		newClusterEnvCommand(streams, f),
		newClusterBuildCommand(streams, f),
		newClusterCheckCommand(streams, f),
		newClusterObjectStoreCommand(streams, f),
		newClusterPrepareHostCommand(streams),
	)
	return cmd
}

func newClusterUpCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	var ports cluster.Ports
	withOLM := true
	nodeKind := string(cluster.NodeAuto)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build what is missing, start every component and wait until the cluster and OLM are healthy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := runcmd.SignalContext(cmd.Context())
			defer cancel()
			opts := f.options(streams.Out)
			opts.Ports = ports
			opts.WithoutOLM = !withOLM
			opts.Node = cluster.NodeKind(nodeKind)
			c, err := cluster.New(opts)
			if err != nil {
				return err
			}
			err = c.Up(ctx)
			var inUse *cluster.PortInUseError
			if errors.As(err, &inUse) {
				return fmt.Errorf("%w (choose another port with the matching --*-port flag, or stop what uses it)", err)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&ports.APIServer, "apiserver-port", 0, "kube-apiserver port (default: kept from the last start, else a free one)")
	fl.IntVar(&ports.Etcd, "etcd-port", 0, "etcd client port")
	fl.IntVar(&ports.EtcdPeer, "etcd-peer-port", 0, "etcd peer port")
	fl.IntVar(&ports.ControllerManager, "controller-manager-port", 0, "kube-controller-manager port")
	fl.IntVar(&ports.Scheduler, "scheduler-port", 0, "kube-scheduler port")
	fl.IntVar(&ports.Kwok, "kwok-port", 0, "kwok health port")
	fl.BoolVar(&withOLM, "olm", true, "run OLM (its CRDs and the olm and catalog operators); --olm=false runs Kubernetes alone")
	fl.StringVar(&nodeKind, "node", nodeKind, "the node: real (containerd and a kubelet run pods; needs root on Linux), kwok (pods are simulated) or auto (real where possible); a cluster keeps the node it was created with")
	fl.IntVar(&ports.Registry, "registry-port", 0, "the local image registry's port (real node)")
	fl.IntVar(&ports.ObjectStore, "object-store-port", 0, "the S3-compatible object store's port")
	return cmd
}

func newClusterPrepareHostCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var opts node.ProvideOptions
	cmd := &cobra.Command{
		Use:   "prepare-host",
		Short: "Install the Debian packages, load the kernel modules and mount what the real node needs (as root; nothing when all is there)",
		Long: `Looks at what the real node needs of this host (the commands its agents
run, what building runc takes, bridge netfilter, overlayfs, the cgroup
controllers) and provides what is missing: Debian packages with apt-get from
the host's configured sources, kernel modules with modprobe, the cgroup file
system's mount. It says what it installs, and does nothing when all is there.
It needs root and apt-get; what nothing can install (another Kubernetes's
kubelet on the host, a cgroup controller the kernel lacks) it names.`,
		Example: `  # as root, before the first ` + "`cluster up --node=real`" + `
  chartpilot cluster prepare-host
  # make demo: prepare where it can, else say why the demo takes a kwok node
  chartpilot cluster prepare-host --best-effort`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := runcmd.SignalContext(cmd.Context())
			defer cancel()
			opts.Out = streams.Out
			return node.ProvideHost(ctx, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.BestEffort, "best-effort", false, "where this host cannot be prepared (not root, no apt-get, not Linux) or installing fails, say what is missing and succeed")
	return cmd
}

func newClusterDownCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	var opts cluster.DownOptions
	var ignoreNotRunning bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every component of the local cluster (and with --wipe delete its state)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.cluster(streams.Out)
			if err != nil {
				return err
			}
			err = c.Down(cmd.Context(), opts)
			if ignoreNotRunning && errors.Is(err, cluster.ErrNotRunning) {
				fmt.Fprintln(streams.Out, err)
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&opts.Wipe, "wipe", false, "also delete the cluster's state: etcd data, certificates, logs and kubeconfigs")
	cmd.Flags().BoolVar(&ignoreNotRunning, "ignore-not-running", false, "succeed when no cluster is running")
	return cmd
}

func newClusterStatusCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	output := outputFlag()
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component's process and health; exit 1 unless all are healthy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.cluster(streams.Out)
			if err != nil {
				return err
			}
			st := c.Status(cmd.Context())
			running := 0
			for _, s := range st {
				if s.Running {
					running++
				}
			}
			if running == 0 {
				return fmt.Errorf("%w in %s (start one with `chartpilot cluster up`)", cluster.ErrNotRunning, c.StateDir())
			}
			err = printData(streams.Out, output.String(), st, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "COMPONENT\tPID\tMEMORY\tHEALTH\tLOG")
				var total uint64
				for _, s := range st {
					total += s.RSSBytes
					health, pid := "healthy", fmt.Sprint(s.PID)
					if !s.Running {
						pid = "-"
					}
					if !s.Healthy {
						health = firstLine(s.Error)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, pid, mebibytes(s.RSSBytes), health, s.Log)
				}
				fmt.Fprintf(tw, "total\t\t%s\t\t\n", mebibytes(total))
				if err := tw.Flush(); err != nil {
					return err
				}
				for _, s := range st {
					if s.Endpoint != "" {
						fmt.Fprintf(w, "%s: %s\n", s.Name, s.Endpoint)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, s := range st {
				if !s.Healthy {
					return fmt.Errorf("local cluster in %s is not healthy: %s %s", c.StateDir(), s.Name, firstLine(s.Error))
				}
			}
			return nil
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func newClusterKubeconfigCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	var pathOnly bool
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the local cluster's admin kubeconfig (or its path with --path)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.running(streams.Out)
			if err != nil {
				return err
			}
			if pathOnly {
				_, err := fmt.Fprintln(streams.Out, c.KubeconfigPath())
				return err
			}
			data, err := os.ReadFile(c.KubeconfigPath())
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(data)
			return err
		},
	}
	cmd.Flags().BoolVar(&pathOnly, "path", false, "print the kubeconfig's path instead of its content")
	return cmd
}

func newClusterEnvCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: "Print shell exports for KUBECONFIG and a PATH with the cluster's kubectl: eval \"$(chartpilot cluster env)\"",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.running(streams.Out)
			if err != nil {
				return err
			}
			inst, err := toolchain.Ensure(cmd.Context(), toolchain.Options{CacheDir: f.cacheDir, Out: streams.ErrOut})
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "export KUBECONFIG=%s\n", shellQuote(c.KubeconfigPath()))
			fmt.Fprintf(streams.Out, "export PATH=%s:\"$PATH\"\n", shellQuote(inst.BinDir))
			return nil
		},
	}
}

func newClusterBuildCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	var only []string
	nodeKind := string(cluster.NodeAuto)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the cluster's components from their Go modules into the cache (cluster up does this when needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := runcmd.SignalContext(cmd.Context())
			defer cancel()
			began := time.Now()
			withNode, err := buildsNode(cluster.NodeKind(nodeKind), streams.Out)
			if err != nil {
				return err
			}
			inst, err := toolchain.Ensure(ctx, toolchain.Options{CacheDir: f.cacheDir, Out: streams.Out, Only: only, Node: withNode})
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "components ready in %s (%s)\n", inst.BinDir, time.Since(began).Round(time.Second))
			return nil
		},
	}
	names := make([]string, 0, len(toolchain.Binaries()))
	for _, b := range toolchain.Binaries() {
		names = append(names, b.Name)
	}
	names = append(names, toolchain.NodeBinaryNames()...)
	cmd.Flags().StringSliceVar(&only, "only", nil, "build only these components: "+strings.Join(names, ", "))
	cmd.Flags().StringVar(&nodeKind, "node", nodeKind, "also build the real node's components: real, kwok (no) or auto (when this host can run a real node)")
	return cmd
}

// buildsNode says whether to build the real node's components for kind.
func buildsNode(kind cluster.NodeKind, out io.Writer) (bool, error) {
	switch kind {
	case cluster.NodeKwok:
		return false, nil
	case cluster.NodeReal:
		return true, cluster.RealNodePossible()
	case cluster.NodeAuto:
		if err := cluster.RealNodePossible(); err != nil {
			fmt.Fprintf(out, "building for a kwok node only: %v\n", err)
			return false, nil
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown kind of node %q: want %s, %s or %s", kind, cluster.NodeAuto, cluster.NodeReal, cluster.NodeKwok)
}

func newClusterCheckCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Prove the running cluster works: a Deployment becomes Available, OLM's APIs answer, an OperatorGroup and a CatalogSource are accepted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := runcmd.SignalContext(cmd.Context())
			defer cancel()
			c, err := f.cluster(streams.Out)
			if err != nil {
				return err
			}
			began := time.Now()
			if _, err := c.Check(ctx, streams.Out); err != nil {
				return err
			}
			fmt.Fprintf(streams.Out, "cluster check passed in %s\n", time.Since(began).Round(10*time.Millisecond))
			return nil
		},
	}
}

func mebibytes(b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func shellQuote(s string) string {
	if s == filepath.Clean(s) && !strings.ContainsAny(s, " '\"$`\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newClusterObjectStoreCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	output := outputFlag()
	cmd := &cobra.Command{
		Use:   "object-store",
		Short: "Print the S3-compatible object store's endpoints and credentials (plain HTTP, path-style)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.running(streams.Out)
			if err != nil {
				return err
			}
			store, err := c.ObjectStore()
			if err != nil {
				return err
			}
			return printData(streams.Out, output.String(), store, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "endpoint:\thttp://%s\n", store.Endpoint)
				if store.PodEndpoint != "" {
					fmt.Fprintf(tw, "from pods:\thttp://%s\n", store.PodEndpoint)
				}
				fmt.Fprintf(tw, "region:\t%s\n", store.Region)
				fmt.Fprintf(tw, "access key id:\t%s\n", store.AccessKeyID)
				fmt.Fprintf(tw, "secret access key:\t%s\n", store.SecretAccessKey)
				return tw.Flush()
			})
		},
	}
	cmd.Flags().VarP(output, "output", "o", "output format: text, json or yaml")
	return cmd
}
