package cli

import (
	"context"
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
		Long: `A local cluster made of real processes: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, OLM's olm and catalog operators, and
a node: a real one (containerd, runc and a kubelet run the pods, as root on
Linux with the host's iptables, conntrack and ip) or a kwok one (pods become
Running and Ready without a container runtime). Every binary is built from its
Go module on first use and cached; no Docker engine and no download is needed.`,
		Example: `  chartpilot cluster up && eval "$(chartpilot cluster env)"
  kubectl get pods -A
  chartpilot cluster status
  chartpilot cluster down --wipe`,
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

// clusterUpOptions are cluster up's flags.
type clusterUpOptions struct {
	f        *clusterFlags
	streams  genericiooptions.IOStreams
	ports    cluster.Ports
	olm      *olmVersionsFlag
	nodeKind string
}

func newClusterUpCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterUpOptions{f: f, streams: streams, olm: &olmVersionsFlag{}, nodeKind: string(cluster.NodeAuto)}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Build what is missing, start every component and wait until the cluster and OLM are healthy",
		Example: `  chartpilot cluster up
  chartpilot cluster up --node kwok --olm=false          # Kubernetes alone, pods simulated
  chartpilot cluster up --olm=both                        # OLM v0 and OLM v1 (catalogd, operator-controller)
  chartpilot cluster up --state-dir /tmp/c2 --apiserver-port 6444`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.ports.APIServer, "apiserver-port", 0, "kube-apiserver port (default: kept from the last start, else a free one)")
	fl.IntVar(&o.ports.Etcd, "etcd-port", 0, "etcd client port")
	fl.IntVar(&o.ports.EtcdPeer, "etcd-peer-port", 0, "etcd peer port")
	fl.IntVar(&o.ports.ControllerManager, "controller-manager-port", 0, "kube-controller-manager port")
	fl.IntVar(&o.ports.Scheduler, "scheduler-port", 0, "kube-scheduler port")
	fl.IntVar(&o.ports.Kwok, "kwok-port", 0, "kwok health port")
	fl.Var(o.olm, "olm", "which OLM runs: v0 (its olm and catalog operators), v1 (catalogd and operator-controller), both, or false for Kubernetes alone (default: what the cluster ran before, v0 for a new one)")
	fl.Lookup("olm").NoOptDefVal = string(cluster.OLMv0)
	fl.StringVar(&o.nodeKind, "node", o.nodeKind, "the node: real (containerd and a kubelet run pods; needs root on Linux), kwok (pods are simulated) or auto (real where possible); a cluster keeps the node it was created with")
	fl.IntVar(&o.ports.Registry, "registry-port", 0, "the local image registry's port (real node)")
	fl.IntVar(&o.ports.ObjectStore, "object-store-port", 0, "the S3-compatible object store's port")
	return cmd
}

func (o *clusterUpOptions) run(ctx context.Context) error {
	opts := o.f.options(o.streams.Out)
	opts.Ports = o.ports
	opts.WithoutOLM, opts.OLM = o.olm.without, o.olm.versions
	opts.Node = cluster.NodeKind(o.nodeKind)
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
}

// clusterDownOptions are cluster down's flags.
type clusterDownOptions struct {
	cluster.DownOptions
	f                *clusterFlags
	streams          genericiooptions.IOStreams
	ignoreNotRunning bool
}

// olmVersionsFlag is cluster up's --olm: v0, v1, both; true and false as
// when it was a boolean.
type olmVersionsFlag struct {
	versions cluster.OLMVersions
	without  bool
	set      string
}

func (f *olmVersionsFlag) String() string { return f.set }

func (f *olmVersionsFlag) Set(s string) error {
	v, without, err := cluster.ParseOLMVersions(s)
	if err != nil {
		return err
	}
	f.versions, f.without, f.set = v, without, s
	return nil
}

func (f *olmVersionsFlag) Type() string { return "string" }

// clusterPrepareHostOptions are cluster prepare-host's flags.
type clusterPrepareHostOptions struct {
	node.ProvideOptions
	streams genericiooptions.IOStreams
}

func newClusterPrepareHostCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &clusterPrepareHostOptions{streams: streams}
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
		RunE: runOptions(o),
	}
	cmd.Flags().BoolVar(&o.BestEffort, "best-effort", false, "where this host cannot be prepared (not root, no apt-get, not Linux) or installing fails, say what is missing and succeed")
	return cmd
}

func (o *clusterPrepareHostOptions) complete(*cobra.Command, []string) error {
	o.Out = o.streams.Out
	return nil
}

func (o *clusterPrepareHostOptions) run(ctx context.Context) error {
	return node.ProvideHost(ctx, o.ProvideOptions)
}

func newClusterDownCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterDownOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop every component of the local cluster (and with --wipe delete its state)",
		Example: `  chartpilot cluster down
  chartpilot cluster down --wipe --ignore-not-running   # start the next one afresh`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().BoolVar(&o.Wipe, "wipe", false, "also delete the cluster's state: etcd data, certificates, logs and kubeconfigs")
	cmd.Flags().BoolVar(&o.ignoreNotRunning, "ignore-not-running", false, "succeed when no cluster is running")
	return cmd
}

func (o *clusterDownOptions) run(ctx context.Context) error {
	c, err := o.f.cluster(o.streams.Out)
	if err != nil {
		return err
	}
	err = c.Down(ctx, o.DownOptions)
	if o.ignoreNotRunning && errors.Is(err, cluster.ErrNotRunning) {
		fmt.Fprintln(o.streams.Out, err)
		return nil
	}
	return err
}

// clusterStatusOptions are cluster status's flags.
type clusterStatusOptions struct {
	f       *clusterFlags
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newClusterStatusCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterStatusOptions{f: f, streams: streams, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each component's process and health; exit 1 unless all are healthy",
		Example: `  chartpilot cluster status
  chartpilot cluster status -o json`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *clusterStatusOptions) run(ctx context.Context) error {
	c, err := o.f.cluster(o.streams.Out)
	if err != nil {
		return err
	}
	st := c.Status(ctx)
	running := 0
	for _, s := range st {
		if s.Running {
			running++
		}
	}
	if running == 0 {
		return fmt.Errorf("%w in %s (start one with `chartpilot cluster up`)", cluster.ErrNotRunning, c.StateDir())
	}
	err = printData(o.streams.Out, o.output.String(), st, func(w io.Writer) error {
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
}

// clusterKubeconfigOptions are cluster kubeconfig's flags.
type clusterKubeconfigOptions struct {
	f        *clusterFlags
	streams  genericiooptions.IOStreams
	pathOnly bool
}

func newClusterKubeconfigCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterKubeconfigOptions{f: f, streams: streams}
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the local cluster's admin kubeconfig (or its path with --path)",
		Example: `  chartpilot cluster kubeconfig > kubeconfig
  kubectl --kubeconfig "$(chartpilot cluster kubeconfig --path)" get nodes`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().BoolVar(&o.pathOnly, "path", false, "print the kubeconfig's path instead of its content")
	return cmd
}

func (o *clusterKubeconfigOptions) run(context.Context) error {
	c, err := o.f.running(o.streams.Out)
	if err != nil {
		return err
	}
	if o.pathOnly {
		_, err := fmt.Fprintln(o.streams.Out, c.KubeconfigPath())
		return err
	}
	data, err := os.ReadFile(c.KubeconfigPath())
	if err != nil {
		return err
	}
	_, err = o.streams.Out.Write(data)
	return err
}

// clusterEnvOptions are cluster env's flags.
type clusterEnvOptions struct {
	f       *clusterFlags
	streams genericiooptions.IOStreams
}

func newClusterEnvCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "env",
		Short:   "Print shell exports for KUBECONFIG and a PATH with the cluster's kubectl: eval \"$(chartpilot cluster env)\"",
		Example: `  eval "$(chartpilot cluster env)" && kubectl get nodes`,
		Args:    cobra.NoArgs,
		RunE:    runOptions(&clusterEnvOptions{f: f, streams: streams}),
	}
}

func (o *clusterEnvOptions) run(ctx context.Context) error {
	c, err := o.f.running(o.streams.Out)
	if err != nil {
		return err
	}
	inst, err := toolchain.Ensure(ctx, toolchain.Options{CacheDir: o.f.cacheDir, Out: o.streams.ErrOut})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "export KUBECONFIG=%s\n", shellQuote(c.KubeconfigPath()))
	fmt.Fprintf(o.streams.Out, "export PATH=%s:\"$PATH\"\n", shellQuote(inst.BinDir))
	return nil
}

// clusterBuildOptions are cluster build's flags.
type clusterBuildOptions struct {
	f        *clusterFlags
	streams  genericiooptions.IOStreams
	only     []string
	nodeKind string
}

func newClusterBuildCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterBuildOptions{f: f, streams: streams, nodeKind: string(cluster.NodeAuto)}
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the cluster's components from their Go modules into the cache (cluster up does this when needed)",
		Example: `  chartpilot cluster build
  chartpilot cluster build --node kwok                   # not the real node's components
  chartpilot cluster build --only kube-apiserver,etcd`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	names := make([]string, 0, len(toolchain.Binaries()))
	for _, b := range toolchain.Binaries() {
		names = append(names, b.Name)
	}
	names = append(names, toolchain.NodeBinaryNames()...)
	for _, b := range toolchain.OLMv1Binaries() {
		names = append(names, b.Name)
	}
	cmd.Flags().StringSliceVar(&o.only, "only", nil, "build only these components: "+strings.Join(names, ", "))
	cmd.Flags().StringVar(&o.nodeKind, "node", o.nodeKind, "also build the real node's components: real, kwok (no) or auto (when this host can run a real node)")
	return cmd
}

func (o *clusterBuildOptions) run(ctx context.Context) error {
	began := time.Now()
	withNode, err := buildsNode(cluster.NodeKind(o.nodeKind), o.streams.Out)
	if err != nil {
		return err
	}
	// OLM v1's too: cluster up and the demo run both OLMs by default, and
	// what is left unbuilt here is built later, by whatever first needs it.
	inst, err := toolchain.Ensure(ctx, toolchain.Options{CacheDir: o.f.cacheDir, Out: o.streams.Out, Only: o.only, Node: withNode, OLMv1: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "components ready in %s (%s)\n", inst.BinDir, time.Since(began).Round(time.Second))
	return nil
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

// clusterCheckOptions are cluster check's flags.
type clusterCheckOptions struct {
	f       *clusterFlags
	streams genericiooptions.IOStreams
}

func newClusterCheckCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "check",
		Short:   "Prove the running cluster works: a Deployment becomes Available, OLM's APIs answer, an OperatorGroup and a CatalogSource are accepted",
		Example: `  chartpilot cluster up && chartpilot cluster check`,
		Args:    cobra.NoArgs,
		RunE:    runOptions(&clusterCheckOptions{f: f, streams: streams}),
	}
}

func (o *clusterCheckOptions) run(ctx context.Context) error {
	c, err := o.f.cluster(o.streams.Out)
	if err != nil {
		return err
	}
	began := time.Now()
	if _, err := c.Check(ctx, o.streams.Out); err != nil {
		return err
	}
	fmt.Fprintf(o.streams.Out, "cluster check passed in %s\n", time.Since(began).Round(10*time.Millisecond))
	return nil
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

// clusterObjectStoreOptions are cluster object-store's flags.
type clusterObjectStoreOptions struct {
	f       *clusterFlags
	streams genericiooptions.IOStreams
	output  *enumFlag
}

func newClusterObjectStoreCommand(streams genericiooptions.IOStreams, f *clusterFlags) *cobra.Command {
	o := &clusterObjectStoreOptions{f: f, streams: streams, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "object-store",
		Short: "Print the S3-compatible object store's endpoints and credentials (plain HTTP, path-style)",
		Example: `  chartpilot cluster object-store
  chartpilot cluster object-store -o json | jq -r .endpoint`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *clusterObjectStoreOptions) run(context.Context) error {
	c, err := o.f.running(o.streams.Out)
	if err != nil {
		return err
	}
	store, err := c.ObjectStore()
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), store, func(w io.Writer) error {
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
}
