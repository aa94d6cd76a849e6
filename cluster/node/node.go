// Package node prepares a host to be the local cluster's real node: one that
// runs containers with containerd, runc and CNI, with a kubelet and
// kube-proxy, as processes of the host. It checks what the host must offer
// (Preflight, naming everything Missing at once), provides what Debian's
// packages, kernel modules and a mount can (ProvideHost), writes the agents' configuration (Write), sets up the node's
// network namespace and kernel settings (Prepare) and removes every trace of
// pods on the host (Cleanup).
//
// The node never shares what a Kubernetes node of the host itself uses.
// kube-proxy's and the kubelet's iptables chains have fixed names (KUBE-*),
// so rules of theirs in the host's tables could not be told apart from the
// host's own: containerd, the kubelet and kube-proxy run in a network
// namespace of the node's own (NetNS, as a kind node's container has), which
// holds the pod bridge, every rule they write and the pods' routes; deleting
// it deletes all of them, and no host table is read or written. A veth pair
// (HostLink on the host, with HostIP; the node's end with NodeIP) links it
// to the host: the API server, the registry and the object store listen on
// HostIP, which only this host and its node reach, and the host routes the
// pod network to NodeIP. Pods' cgroups live under CgroupRoot, not the
// kubelet's default /kubepods, and everything on disk under the node's
// directory. Everything else of the cluster stays on 127.0.0.1.
//
// The network namespace, the link and the cgroup root are named for
// chartpilot and belong to the machine, so one real node runs per machine
// (see Claim).
package node

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// Network is the node's addressing.
const (
	// NetNS is the node's network namespace, bound at /run/netns/NetNS.
	NetNS = "chartpilot-node"
	// HostLink is the host's end of the veth pair to the node's namespace;
	// nodeLink is the node's end, inside it.
	HostLink = "chartpilot-host"
	nodeLink = "eth0"
	// HostIP is the host's address on HostLink, NodeIP the node's on its
	// end (its InternalIP, where the kubelet serves); linkPrefix is the
	// link's prefix length.
	HostIP     = "10.89.0.1"
	NodeIP     = "10.89.0.2"
	linkPrefix = "/30"
	// Bridge is the pod network's bridge, in the node's namespace.
	Bridge = "chartpilot0"
	// PodCIDR is the pod network; PodGateway, its first address, is the
	// bridge's.
	PodCIDR    = "10.88.0.0/16"
	PodGateway = "10.88.0.1"
	// ClusterDNS is the address of the DNS Service, in the cluster's service range.
	ClusterDNS = "10.96.0.10"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
	// CgroupRoot is the kubelet's cgroup root: pods live under
	// CgroupRoot/kubepods, never in a host kubelet's /kubepods.
	CgroupRoot = "/chartpilot"
)

// NetNSPath is the node's network namespace's file.
func NetNSPath() string { return filepath.Join(netnsDir, NetNS) }

// netnsDir is where `ip netns` binds named network namespaces.
const netnsDir = "/run/netns"

// Config is where the node's agents live and what they talk to.
type Config struct {
	// Dir holds everything the node writes: configuration, containerd's
	// root and state, the kubelet's root, CNI state.
	Dir string
	// BinDir holds runc, the containerd shim and the CNI plugins.
	BinDir string
	// Name is the node's name, as it registers.
	Name string
	// Registry is the local registry's host:port on HostIP; containerd
	// pulls from it over plain HTTP.
	Registry string
	// PauseImage is the pod sandbox's image reference.
	PauseImage string
	// Kubeconfig files of the kubelet and kube-proxy.
	KubeletKubeconfig, ProxyKubeconfig string
	// CACert verifies clients of the kubelet's API (the API server's).
	CACert string
	// KubeletCert and KubeletKey serve the kubelet's API on NodeIP.
	KubeletCert, KubeletKey string
	// Ports on NodeIP for the agents' health and metrics endpoints.
	Ports Ports
}

// Ports are the node agents' ports on NodeIP.
type Ports struct {
	KubeletHealthz int `json:"kubeletHealthz"`
	ProxyHealthz   int `json:"proxyHealthz"`
	ProxyMetrics   int `json:"proxyMetrics"`
}

// KubeletPort is the kubelet's API port on NodeIP, where the API server
// reaches it for logs and exec.
const KubeletPort = 10250

func (c Config) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

// ContainerdSocket is containerd's gRPC socket, which the kubelet uses.
func (c Config) ContainerdSocket() string { return c.path("containerd", "containerd.sock") }

// ContainerdConfig is containerd's configuration file.
func (c Config) ContainerdConfig() string { return c.path("containerd", "config.toml") }

// KubeletConfig is the kubelet's configuration file.
func (c Config) KubeletConfig() string { return c.path("kubelet", "config.yaml") }

// ProxyConfig is kube-proxy's configuration file.
func (c Config) ProxyConfig() string { return c.path("kube-proxy", "config.yaml") }

// CNIBinDir holds links to the CNI plugins, and nothing else.
func (c Config) CNIBinDir() string { return c.path("cni", "bin") }

// KubeletRoot is the kubelet's root directory (pods' volumes).
func (c Config) KubeletRoot() string { return c.path("kubelet", "root") }

// ContainerdRoot is containerd's root directory (images, snapshots).
func (c Config) ContainerdRoot() string { return c.path("containerd", "root") }

// ContainerdArgs are containerd's command line.
func (c Config) ContainerdArgs() []string {
	return []string{"--config=" + c.ContainerdConfig()}
}

// KubeletArgs are the kubelet's command line; the rest is in its config file.
func (c Config) KubeletArgs() []string {
	return []string{
		"--config=" + c.KubeletConfig(),
		"--kubeconfig=" + c.KubeletKubeconfig,
		"--hostname-override=" + c.Name,
		"--node-ip=" + NodeIP,
		"--root-dir=" + c.KubeletRoot(),
		"--cert-dir=" + c.path("kubelet", "pki"),
		"--v=1",
	}
}

// ProxyArgs are kube-proxy's command line.
func (c Config) ProxyArgs() []string {
	return []string{"--config=" + c.ProxyConfig(), "--v=1"}
}

// KubeletHealthz is the kubelet's health endpoint: on the node's address,
// where the host reaches into the node's namespace.
func (c Config) KubeletHealthz() string {
	return "http://" + nodeAddr(c.Ports.KubeletHealthz) + "/healthz"
}

// ProxyHealthz is kube-proxy's health endpoint.
func (c Config) ProxyHealthz() string {
	return "http://" + nodeAddr(c.Ports.ProxyHealthz) + "/healthz"
}

func nodeAddr(port int) string { return net.JoinHostPort(NodeIP, strconv.Itoa(port)) }

// KubeletAddr is the kubelet's API address.
func KubeletAddr() string { return net.JoinHostPort(NodeIP, strconv.Itoa(KubeletPort)) }

// cniPlugins are the plugins the pod network uses, linked into CNIBinDir.
var cniPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

func (c Config) validate() error {
	switch {
	case c.Dir == "", c.BinDir == "", c.Name == "":
		return fmt.Errorf("node config: Dir, BinDir and Name are required")
	case c.Registry == "", c.PauseImage == "":
		return fmt.Errorf("node config: Registry and PauseImage are required")
	}
	return nil
}
