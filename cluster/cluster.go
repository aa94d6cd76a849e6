package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/pki"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/flock"
)

// ErrNotRunning is returned by Down when no component of the cluster is running.
var ErrNotRunning = errors.New("no local cluster is running")

// Options configure a cluster. The zero value is a cluster in the user's
// state directory with ports chosen at its first start.
type Options struct {
	// StateDir holds everything the cluster writes. Defaults to
	// $XDG_STATE_HOME/chartpilot/cluster (~/.local/state/chartpilot/cluster).
	StateDir string
	// CacheDir holds the built component binaries (see package toolchain).
	CacheDir string
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Ports to listen on, all on 127.0.0.1. A zero field takes the port the
	// cluster used before, or a free one at its first start.
	Ports Ports
	// StartTimeout bounds the wait for each component to become healthy.
	// Defaults to 90s.
	StartTimeout time.Duration
	// StopTimeout is the grace period between SIGTERM and SIGKILL. Defaults to 10s.
	StopTimeout time.Duration
	// BeforeStart, when set, is called as Up is about to start each
	// component (one not already running), before its ports are checked:
	// a hook to follow a start, or to make a component fail to start
	// (clustertest.PortTrap).
	BeforeStart func(component string)
	// WithoutOLM starts Kubernetes alone: no OLM CRDs, no olm and catalog
	// operators. The choice is remembered for Status.
	WithoutOLM bool
	// OLM is which OLM runs (unless WithoutOLM): OLMv0, OLMv1 or OLMBoth.
	// Empty keeps what the cluster ran before, OLMv0 for a new one.
	OLM OLMVersions
	// Node is the kind of node: NodeKwok (the default, pods are simulated)
	// or NodeReal (containerd, the kubelet and kube-proxy run real pods;
	// OLM runs in-cluster). A cluster keeps the kind it was created with.
	Node NodeKind
}

// NodeKind is how the cluster's node runs pods.
type NodeKind string

const (
	// NodeKwok marks pods Running and Ready without running them.
	NodeKwok NodeKind = "kwok"
	// NodeReal runs pods' containers on this host.
	NodeReal NodeKind = "real"
	// NodeAuto is a real node where this host can run one, else kwok.
	NodeAuto NodeKind = "auto"
)

// Ports are the cluster's listening ports on 127.0.0.1.
type Ports struct {
	APIServer         int `json:"apiServer"`
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
	// Registry is the local image registry (real node only).
	Registry int `json:"registry,omitempty"`
	// ObjectStore is the S3-compatible object store.
	ObjectStore int `json:"objectStore,omitempty"`
	// Node are the real node agents' loopback ports.
	Node node.Ports `json:"node"`
	// CSI are the real node's CSI components' ports.
	CSI CSIPorts `json:"csi"`
	// OLMv1 are OLM v1's ports on the host (kwok node).
	OLMv1 OLMv1Ports `json:"olmv1"`
}

// OLM's operators serve health and metrics on fixed ports of every interface
// (its server package hard-codes them): olm with TLS, catalog without.
const (
	olmHealthPort     = 8443
	catalogHealthPort = 8080
)

// Cluster is a local cluster in a state directory.
type Cluster struct {
	opts  Options
	state state
	// images are the real node's images by digest, once published.
	images images.Refs
}

// state is what a cluster remembers between commands, in cluster.json.
type state struct {
	Ports      Ports `json:"ports"`
	WithoutOLM bool  `json:"withoutOLM,omitempty"`
	// OLM is which OLM it runs; empty is OLM v0, as before OLM v1 came.
	OLM  OLMVersions `json:"olm,omitempty"`
	Node NodeKind    `json:"node,omitempty"`
	// BinDir is where the real node's binaries were, for Down: the cache
	// may have moved on to other versions since.
	BinDir string `json:"binDir,omitempty"`
}

// DefaultStateDir is where a cluster lives when Options.StateDir is empty.
func DefaultStateDir() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "chartpilot", "cluster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locating the home directory for the cluster state: %w", err)
	}
	return filepath.Join(home, ".local", "state", "chartpilot", "cluster"), nil
}

// New returns the cluster of opts.StateDir; it starts nothing.
func New(opts Options) (*Cluster, error) {
	if opts.StateDir == "" {
		dir, err := DefaultStateDir()
		if err != nil {
			return nil, err
		}
		opts.StateDir = dir
	}
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	opts.StateDir = abs
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 10 * time.Second
	}
	c := &Cluster{opts: opts}
	data, err := os.ReadFile(c.path(stateFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &c.state); err != nil {
			return nil, fmt.Errorf("reading %s: %w (remove the state with `chartpilot cluster down --wipe`)", c.path(stateFile), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("reading cluster state: %w", err)
	}
	return c, nil
}

// StateDir is the cluster's state directory.
func (c *Cluster) StateDir() string { return c.opts.StateDir }

// KubeconfigPath is the admin kubeconfig, written by Up.
func (c *Cluster) KubeconfigPath() string { return c.path("kubeconfig") }

// Ports returns the ports the cluster uses (zero before its first start).
func (c *Cluster) Ports() Ports { return c.state.Ports }

// RESTConfig returns a client configuration for the cluster's admin.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	if _, err := os.Stat(c.KubeconfigPath()); err != nil {
		return nil, fmt.Errorf("%w in %s (run `chartpilot cluster up`)", ErrNotRunning, c.opts.StateDir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", c.KubeconfigPath(), err)
	}
	return cfg, nil
}

// clients returns typed and dynamic admin clients.
func (c *Cluster) clients() (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cs, dyn, nil
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.opts.StateDir}, elem...)...)
}

func (c *Cluster) pki() pki.Set { return pki.Paths(c.path("pki")) }

// resolvePorts fills each zero port from the options, then from a free port
// that picker holds until the components listen on it.
func (c *Cluster) resolvePorts(picker *portPicker) error {
	want := []struct {
		opt   int
		state *int
	}{
		{c.opts.Ports.APIServer, &c.state.Ports.APIServer},
		{c.opts.Ports.Etcd, &c.state.Ports.Etcd},
		{c.opts.Ports.EtcdPeer, &c.state.Ports.EtcdPeer},
		{c.opts.Ports.ControllerManager, &c.state.Ports.ControllerManager},
		{c.opts.Ports.Scheduler, &c.state.Ports.Scheduler},
		{c.opts.Ports.Kwok, &c.state.Ports.Kwok},
		{c.opts.Ports.Registry, &c.state.Ports.Registry},
		{c.opts.Ports.ObjectStore, &c.state.Ports.ObjectStore},
		{c.opts.Ports.Node.KubeletHealthz, &c.state.Ports.Node.KubeletHealthz},
		{c.opts.Ports.Node.ProxyHealthz, &c.state.Ports.Node.ProxyHealthz},
		{c.opts.Ports.Node.ProxyMetrics, &c.state.Ports.Node.ProxyMetrics},
		{c.opts.Ports.CSI.Provisioner, &c.state.Ports.CSI.Provisioner},
		{c.opts.Ports.CSI.Snapshotter, &c.state.Ports.CSI.Snapshotter},
		{c.opts.Ports.CSI.SnapshotController, &c.state.Ports.CSI.SnapshotController},
		{c.opts.Ports.OLMv1.Catalogs, &c.state.Ports.OLMv1.Catalogs},
		{c.opts.Ports.OLMv1.Webhook, &c.state.Ports.OLMv1.Webhook},
		{c.opts.Ports.OLMv1.CatalogdHealth, &c.state.Ports.OLMv1.CatalogdHealth},
		{c.opts.Ports.OLMv1.CatalogdMetrics, &c.state.Ports.OLMv1.CatalogdMetrics},
		{c.opts.Ports.OLMv1.ControllerHealth, &c.state.Ports.OLMv1.ControllerHealth},
	}
	for _, w := range want {
		switch {
		case w.opt != 0:
			*w.state = w.opt
		case *w.state == 0:
			p, err := picker.pick()
			if err != nil {
				return err
			}
			*w.state = p
		}
	}
	c.state.WithoutOLM = c.opts.WithoutOLM
	c.state.OLM = c.opts.OLM
	c.state.Node = c.opts.Node
	return c.saveState()
}

// stateFile holds the state; it also marks the directory as a cluster's,
// for Down's wipe (checkStateDir).
const stateFile = "cluster.json"

// saveState writes the state file.
func (c *Cluster) saveState() error {
	data, err := json.MarshalIndent(c.state, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(c.path(stateFile), append(data, '\n'), 0o644)
}

// lock takes the state directory's lock, so that two commands never start or
// stop the same cluster at once. The lock dies with the process.
func (c *Cluster) lock() (unlock func(), err error) {
	if err := os.MkdirAll(c.opts.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", c.opts.StateDir, err)
	}
	unlock, err = flock.TryLock(c.path("lock"))
	if errors.Is(err, flock.ErrLocked) {
		return nil, fmt.Errorf("another chartpilot command is starting or stopping the cluster in %s", c.opts.StateDir)
	}
	return unlock, err
}

// ErrNodeKind is returned by Up for a kind of node other than the one the
// cluster was created with.
var ErrNodeKind = errors.New("the cluster runs another kind of node")

// checkNodeKind settles the kind of node: the one the cluster was created
// with, which never changes (its etcd knows the other node); for a new
// cluster the one asked for, where NodeAuto is a real node when the host
// can run one, else kwok, saying why in one line.
func (c *Cluster) checkNodeKind() error {
	created := c.state.Node
	if created == "" && c.state.Ports.APIServer != 0 {
		created = NodeKwok // created before nodes had kinds
	}
	asked := c.opts.Node
	switch {
	case created != "" && (asked == "" || asked == NodeAuto):
		c.opts.Node = created
	case created != "" && created != asked:
		return fmt.Errorf("%w: the cluster in %s has a %s node, not %s (`chartpilot cluster down --wipe` first)", ErrNodeKind, c.opts.StateDir, created, asked)
	case asked == "":
		c.opts.Node = NodeKwok
	case asked == NodeAuto:
		c.opts.Node = NodeReal
		if err := RealNodePossible(); err != nil {
			c.opts.Node = NodeKwok
			fmt.Fprintf(c.opts.Out, "using a kwok node (pods are simulated): %v\n", err)
		}
	case asked == NodeReal:
		if err := RealNodePossible(); err != nil {
			return err
		}
	case asked != NodeKwok:
		return fmt.Errorf("unknown kind of node %q: want %s, %s or %s", asked, NodeAuto, NodeReal, NodeKwok)
	}
	c.state.Node = c.opts.Node
	return nil
}

// RealNodePossible says why this host cannot run a real node, if it cannot:
// everything missing at once, and the command that provides it.
func RealNodePossible() error { return node.Host{}.Preflight() }

// OLMVersions says which OLM a cluster runs.
type OLMVersions string

const (
	// OLMv0 is the OLM of Subscriptions and ClusterServiceVersions: the olm
	// and catalog operators. The default.
	OLMv0 OLMVersions = "v0"
	// OLMv1 is the OLM of ClusterCatalogs and ClusterExtensions: catalogd
	// and operator-controller.
	OLMv1 OLMVersions = "v1"
	// OLMBoth runs both side by side, as clusters moving to OLM v1 do.
	OLMBoth OLMVersions = "both"
)

// ParseOLMVersions reads a --olm value: v0, v1, both, or (as the flag was
// a boolean before) true for v0 and false for none.
func ParseOLMVersions(s string) (v OLMVersions, without bool, err error) {
	switch s {
	case string(OLMv0), string(OLMv1), string(OLMBoth):
		return OLMVersions(s), false, nil
	case "true":
		return OLMv0, false, nil
	case "false", "none":
		return "", true, nil
	}
	return "", false, fmt.Errorf("unknown OLM %q: want v0, v1, both or none", s)
}

// runsV0 and runsV1 say whether the versions include OLM v0 and OLM v1.
func (v OLMVersions) runsV0() bool { return v == OLMv0 || v == OLMBoth || v == "" }
func (v OLMVersions) runsV1() bool { return v == OLMv1 || v == OLMBoth }

// CSIPorts are the CSI components' loopback ports (metrics, health).
type CSIPorts struct {
	Provisioner        int `json:"provisioner,omitempty"`
	Snapshotter        int `json:"snapshotter,omitempty"`
	SnapshotController int `json:"snapshotController,omitempty"`
}

// OLMv1Ports are OLM v1's ports on 127.0.0.1 when it runs on the host.
type OLMv1Ports struct {
	// Catalogs is where catalogd serves the catalogs' content over HTTPS.
	Catalogs int `json:"catalogs,omitempty"`
	// Webhook is catalogd's admission webhook (it listens on every
	// interface: controller-runtime's webhook server takes a port only).
	Webhook          int `json:"webhook,omitempty"`
	CatalogdHealth   int `json:"catalogdHealth,omitempty"`
	CatalogdMetrics  int `json:"catalogdMetrics,omitempty"`
	ControllerHealth int `json:"controllerHealth,omitempty"`
}

// apiHost is the address the API server listens on: loopback, or on a real
// node the host's address on the node's link, which pods reach through the
// kubernetes Service.
func (c *Cluster) apiHost() string {
	if c.state.Node == NodeReal {
		return node.HostIP
	}
	return "127.0.0.1"
}

// apiAddr is the API server's host:port.
func (c *Cluster) apiAddr() string {
	return net.JoinHostPort(c.apiHost(), strconv.Itoa(c.state.Ports.APIServer))
}

func (c *Cluster) componentKubeconfig(name string) string {
	return c.path("kubeconfigs", name+".kubeconfig")
}

func (c *Cluster) pidFile(name string) string { return c.path("run", name+".pid") }

// LogFile is where a component's output goes.
func (c *Cluster) LogFile(name string) string { return c.path("logs", name+".log") }
