// Package node prepares a host to be the local cluster's real node: one that
// runs containers with containerd, runc and CNI, with a kubelet and
// kube-proxy, as processes of the host. It checks what the host must offer
// (Preflight), writes the agents' configuration (Write), sets up the node's
// bridge and kernel settings (Prepare) and removes every trace of pods on
// the host (Cleanup).
//
// The node's address is the gateway of its pod bridge: an address that only
// this host and its pods can reach, never an external interface. The API
// server and the kubelet listen there, so that pods reach them through the
// kubernetes Service; everything else stays on 127.0.0.1.
//
// The bridge, the iptables rules and the kernel settings belong to the
// machine, so one real node runs per machine (see Claim).
package node

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// Network is the node's addressing: pods get addresses of PodCIDR from the
// bridge, whose gateway (NodeIP) is the node's own address.
const (
	// Bridge is the pod network's bridge.
	Bridge = "chartpilot0"
	// PodCIDR is the pod network; NodeIP is its first address.
	PodCIDR = "10.88.0.0/16"
	NodeIP  = "10.88.0.1"
	// ClusterDNS is the address of the DNS Service, in the cluster's service range.
	ClusterDNS = "10.96.0.10"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
)

// Config is where the node's agents live and what they talk to.
type Config struct {
	// Dir holds everything the node writes: configuration, containerd's
	// root and state, the kubelet's root, CNI state.
	Dir string
	// BinDir holds runc, the containerd shim and the CNI plugins.
	BinDir string
	// Name is the node's name, as it registers.
	Name string
	// Registry is the local registry's host:port on 127.0.0.1; containerd
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
	// Ports on 127.0.0.1 for the agents' health and metrics endpoints.
	Ports Ports
}

// Ports are the node agents' loopback ports.
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

// KubeletHealthz is the kubelet's health endpoint.
func (c Config) KubeletHealthz() string {
	return "http://" + loopback(c.Ports.KubeletHealthz) + "/healthz"
}

// ProxyHealthz is kube-proxy's health endpoint.
func (c Config) ProxyHealthz() string {
	return "http://" + loopback(c.Ports.ProxyHealthz) + "/healthz"
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

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
