package cluster

import (
	"context"
	"net"
	"strconv"
	"strings"
)

// component is one process of the cluster.
type component struct {
	name string
	// addrs are what it listens on, checked to be free before it starts.
	addrs []string
	args  []string
	env   []string
	// health answers nil when the component serves.
	health func(ctx context.Context) error
	// before runs before the component starts (or is found running), after
	// once it is healthy: the steps that need what started before it.
	before, after func(ctx context.Context) error
	// endpoint is the URL users reach it at, for the ones they use
	// directly (the registry, the object store).
	endpoint string
	// netns is the network namespace it runs in; empty is the host's.
	netns string
}

// Component names, in start order.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
	OLM               = "olm"
	Catalog           = "catalog"
	// The real node's components (OLM then runs in pods).
	Registry   = "registry"
	Containerd = "containerd"
	Kubelet    = "kubelet"
	KubeProxy  = "kube-proxy"
)

// ComponentNames lists every component a cluster may run, in start order.
func ComponentNames() []string {
	names := []string{Registry, Etcd, APIServer, ControllerManager, Scheduler, ObjectStoreName, Kwok, OLM, Catalog, Catalogd, OperatorController, Containerd, Kubelet, KubeProxy, VolumePermissions}
	return append(names, csiComponents...)
}

const (
	// kwokNodeAnnotation marks the nodes kwok manages (and only those).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// podCIDR keeps every pod address on loopback.
	podCIDR              = "127.100.0.1/16"
	serviceCIDR          = "10.96.0.0/16"
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// frontProxyClient is the identity the API server proxies to extension API servers with.
	frontProxyClient = "front-proxy-client"
)

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Namespaces of OLM, as its upstream manifests name them.
const (
	OLMNamespace       = "olm"
	OperatorsNamespace = "operators"
)

func hasText(body, want string) bool { return want == "" || strings.Contains(body, want) }
