package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/flock"
)

// Identities of the real node's agents, as the API server's authorizers
// expect them: the Node authorizer knows nodes by system:node:NAME in
// system:nodes, the default RBAC binds system:kube-proxy to the node
// proxier role, and the API server's own client of kubelets is bound to
// the kubelet API admin role at bootstrap.
// Client identities are named for their component, whose kubeconfig uses them.
const (
	kubeletClient    = Kubelet
	kubeletServing   = Kubelet + "-serving"
	proxyClient      = KubeProxy
	apiKubeletClient = "kube-apiserver-kubelet-client"
)

// registryVersion tags the images chartpilot builds for the node; pods
// use them by digest.
const registryVersion = "local"

// RegistryAddr is the local registry's host:port (real node only): on the
// host's address on the node's link, where the node's containerd pulls
// from, in its network namespace, and this host pushes to.
func (c *Cluster) RegistryAddr() string { return RegistryAddr(c.state.Ports.Registry) }

// RegistryAddr is the address of a real node's registry listening on port
// (Ports.Registry).
func RegistryAddr(port int) string { return net.JoinHostPort(node.HostIP, strconv.Itoa(port)) }

// nodeConfig is the real node's layout in the state directory.
func (c *Cluster) nodeConfig(inst *toolchain.Installation) node.Config {
	set := c.pki()
	cert, key := set.Cert(kubeletServing)
	cfg := node.Config{
		Dir:               c.path("node"),
		Name:              NodeName,
		Registry:          c.RegistryAddr(),
		PauseImage:        c.images[images.Pause],
		KubeletKubeconfig: c.componentKubeconfig(Kubelet),
		ProxyKubeconfig:   c.componentKubeconfig(KubeProxy),
		CACert:            set.CACert,
		KubeletCert:       cert,
		KubeletKey:        key,
		Ports:             c.state.Ports.Node,
	}
	if inst != nil {
		cfg.BinDir = inst.BinDir
	}
	return cfg
}

// apiServerNodeArgs let the API server reach the kubelet (logs, exec) on a
// real node.
func (c *Cluster) apiServerNodeArgs() []string {
	if c.state.Node != NodeReal {
		// Endpoints may not hold loopback addresses; nothing reaches a
		// loopback API server through the kubernetes Service anyway.
		return []string{"--endpoint-reconciler-type=none"}
	}
	// This host reaches pods (a route to the pod network) but not Service
	// addresses, which only the node's kube-proxy knows: webhooks and
	// extension API servers are called at their Services' endpoints.
	set := c.pki()
	cert, key := set.Cert(apiKubeletClient)
	return []string{
		"--kubelet-client-certificate=" + cert,
		"--kubelet-client-key=" + key,
		"--kubelet-certificate-authority=" + set.CACert,
		"--kubelet-preferred-address-types=InternalIP",
		"--enable-aggregator-routing=true",
	}
}

// realNode are the components of a real node: the registry first (its
// images are published before anything pulls them), then, after the
// control plane, containerd, the kubelet, kube-proxy, what makes new
// volumes writable by non-root pods, and the CSI storage (csi.go).
func (c *Cluster) realNode(inst *toolchain.Installation) []component {
	cfg := c.nodeConfig(inst)
	bin := func(name string) string {
		if inst == nil {
			return name
		}
		return inst.Binary(name)
	}
	return append([]component{
		{
			name:     Registry,
			addrs:    []string{c.RegistryAddr()},
			endpoint: "http://" + c.RegistryAddr(),
			args:     []string{"serve", c.path("registry", "config.yml")},
			before:   func(context.Context) error { return c.writeRegistryConfig() },
			health: func(ctx context.Context) error {
				return c.probe(ctx, plainHTTP, "http://"+c.RegistryAddr()+"/v2/", "")
			},
			after: func(ctx context.Context) error { return c.publishImages(ctx, inst) },
		},
		{
			name:  Containerd,
			netns: node.NetNSPath(),
			args:  cfg.ContainerdArgs(),
			// containerd finds its runc shim in PATH.
			env: []string{"PATH=" + filepath.Dir(bin("containerd")) + string(os.PathListSeparator) + os.Getenv("PATH")},
			before: func(context.Context) error {
				cfg := c.nodeConfig(inst) // with the pause image published by now
				return cfg.Write()
			},
			health: func(ctx context.Context) error { return dialUnix(ctx, cfg.ContainerdSocket()) },
		},
		// The node's agents listen in its own network namespace, where
		// nothing else does: their ports need no check on the host's.
		{
			name:   Kubelet,
			netns:  node.NetNSPath(),
			args:   cfg.KubeletArgs(),
			health: func(ctx context.Context) error { return c.probe(ctx, plainHTTP, cfg.KubeletHealthz(), "ok") },
		},
		{
			name:   KubeProxy,
			netns:  node.NetNSPath(),
			args:   cfg.ProxyArgs(),
			health: func(ctx context.Context) error { return c.probe(ctx, plainHTTP, cfg.ProxyHealthz(), "") },
		},
		c.volumePermissions(),
	}, c.csiNode(inst)...)
}

// writeRegistryConfig configures the registry: its blobs on disk in the
// state directory, listening on loopback only.
func (c *Cluster) writeRegistryConfig() error {
	conf := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, c.path("registry", "data"), c.RegistryAddr())
	if err := os.MkdirAll(c.path("registry", "data"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.path("registry", "config.yml"), []byte(conf), 0o644)
}

// publishImages pushes the node's images to the registry and remembers
// their references.
func (c *Cluster) publishImages(ctx context.Context, inst *toolchain.Installation) error {
	began := time.Now()
	specs := images.Specs()
	if _, v1 := c.olmVersions(); v1 {
		specs = append(specs, images.OLMv1Spec())
	}
	refs, err := images.Publish(ctx, c.RegistryAddr(), inst.BinDir, registryVersion, specs)
	if err != nil {
		return fmt.Errorf("publishing the node's images: %w", err)
	}
	c.images = refs
	fmt.Fprintf(c.opts.Out, "  %-24s %d images published to %s in %s\n", "images", len(refs), c.RegistryAddr(), time.Since(began).Round(10*time.Millisecond))
	return nil
}

func dialUnix(ctx context.Context, path string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	return conn.Close()
}

// cleanupNode removes what the real node left on the host once its agents
// are stopped: containers, mounts, its cgroups, its network namespace (with
// kube-proxy's rules and the bridge), and the node's claim on the machine.
// kube-proxy's own --cleanup is not run: it would clean the host's tables,
// which the node never wrote to (and which a Kubernetes of the host owns).
func (c *Cluster) cleanupNode(ctx context.Context) error {
	cfg := c.nodeConfig(nil)
	cfg.BinDir = c.state.BinDir
	if node.ClaimedByOther(cfg.Dir) {
		// Another cluster took the node over (and cleaned up after this
		// one): the network namespace and cgroups are its now.
		fmt.Fprintf(c.opts.Out, "  %-24s taken over by another cluster; its setup of this host left alone\n", "node")
		return nil
	}
	var errs []error
	if err := cfg.Cleanup(); err != nil {
		errs = append(errs, err)
	}
	node.Release(cfg.Dir)
	fmt.Fprintf(c.opts.Out, "  %-24s containers, mounts, cgroups %s and network namespace %s removed\n", "node", node.CgroupRoot, node.NetNS)
	return errors.Join(errs...)
}

// stopPods kills the real node's pods once its agents are stopped, before
// the control plane: the API server would otherwise wait out its grace
// period for the pods' watches to end.
func (c *Cluster) stopPods() {
	cfg := c.nodeConfig(nil)
	cfg.BinDir = c.state.BinDir
	if c.state.Node != NodeReal || node.ClaimedByOther(cfg.Dir) {
		return
	}
	_ = cfg.KillContainers() // Cleanup kills what is left, and says so
}

// nodeRuns says whether the cluster of the node directory nodeDir runs, or
// a chartpilot command is starting or stopping it: only then does its claim
// on the machine's real node stand.
func nodeRuns(nodeDir string) bool {
	owner := &Cluster{opts: Options{StateDir: filepath.Dir(nodeDir)}}
	if _, err := os.Stat(owner.opts.StateDir); err != nil {
		return false
	}
	unlock, err := flock.TryLock(owner.path("lock"))
	if err != nil {
		return errors.Is(err, flock.ErrLocked)
	}
	unlock()
	return owner.anyRunning()
}

// cleanupStaleNode removes what the real node of a cluster that no longer
// runs left on the host (its containers, mounts, rules and bridge), before
// this cluster's node sets the host up again.
func (c *Cluster) cleanupStaleNode(nodeDir string) {
	cfg := node.Config{Dir: nodeDir, BinDir: c.state.BinDir}
	err := cfg.Cleanup()
	fmt.Fprintf(c.opts.Out, "  %-24s taken over from the cluster in %s, which no longer runs", "node", filepath.Dir(nodeDir))
	if err != nil {
		fmt.Fprintf(c.opts.Out, "; some of what it left stays: %v", err)
	}
	fmt.Fprintln(c.opts.Out)
}

// NodeKind is the kind of node the cluster was created with (empty before
// its first start).
func (c *Cluster) NodeKind() NodeKind { return c.state.Node }

// Image is the reference by digest of one of the real node's images
// (images.OPM, images.HelloServer...), once Up has published them.
func (c *Cluster) Image(name string) string { return c.images[name] }
