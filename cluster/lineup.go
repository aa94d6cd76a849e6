package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// The lineup: which processes a cluster runs, in order, for its node kind and
// OLM; each file of its parts (olmv1.go, csi.go, storage.go...) makes its own.

// components describes the processes of this cluster, in start order. inst
// is nil when only their names and health matter (Status).
func (c *Cluster) components(inst *toolchain.Installation) []component {
	// The object store needs nothing: it starts once the control plane
	// runs, so that a control plane that fails to start leaves it unstarted.
	plane := append(c.controlPlane(inst), c.objectStore())
	if c.state.Node == NodeReal {
		rn := c.realNode(inst)
		return append(append(rn[:1:1], plane...), rn[1:]...)
	}
	stages := ""
	if inst != nil {
		stages = inst.KwokStages
	}
	kwok := c.kwokNode(stages)
	v0, v1 := c.olmVersions()
	if !v0 {
		kwok = kwok[:1]
	}
	if v1 {
		kwok = append(kwok, c.olmv1Components()...)
	}
	return append(plane, kwok...)
}

func (c *Cluster) controlPlane(inst *toolchain.Installation) []component {
	p := c.state.Ports
	set := c.pki()
	cert := func(name string) (string, string) { return set.Cert(name) }
	apiCert, apiKey := cert(APIServer)
	proxyCert, proxyKey := cert(frontProxyClient)
	kcmCert, kcmKey := cert(ControllerManager + "-serving")
	schedCert, schedKey := cert(Scheduler + "-serving")
	etcdURL := "http://" + loopback(p.Etcd)
	peerURL := "http://" + loopback(p.EtcdPeer)

	return []component{
		{
			name:  Etcd,
			addrs: []string{loopback(p.Etcd), loopback(p.EtcdPeer)},
			args: []string{
				"--name=chartpilot",
				"--data-dir=" + c.path("etcd"),
				"--listen-client-urls=" + etcdURL,
				"--advertise-client-urls=" + etcdURL,
				"--listen-peer-urls=" + peerURL,
				"--initial-advertise-peer-urls=" + peerURL,
				"--initial-cluster=chartpilot=" + peerURL,
				// A throwaway development cluster: durability is not worth the fsync latency.
				"--unsafe-no-fsync=true",
				"--log-level=warn",
			},
			health: func(ctx context.Context) error {
				return c.probe(ctx, plainHTTP, etcdURL+"/health", `"health":"true"`)
			},
		},
		{
			name:  APIServer,
			addrs: []string{c.apiAddr()},
			args: append([]string{
				"--etcd-servers=" + etcdURL,
				"--bind-address=" + c.apiHost(),
				"--advertise-address=" + c.apiHost(),
				"--secure-port=" + strconv.Itoa(p.APIServer),
				"--tls-cert-file=" + apiCert,
				"--tls-private-key-file=" + apiKey,
				"--client-ca-file=" + set.CACert,
				"--service-account-issuer=" + serviceAccountIssuer,
				"--service-account-key-file=" + set.ServiceAccountPub,
				"--service-account-signing-key-file=" + set.ServiceAccountKey,
				"--service-cluster-ip-range=" + serviceCIDR,
				"--authorization-mode=Node,RBAC",
				"--allow-privileged=true",
				"--profiling=false",
				// The aggregation layer, so that extension API servers (OLM's
				// packageserver, metrics-server) can be registered.
				"--requestheader-client-ca-file=" + set.CACert,
				"--requestheader-allowed-names=" + frontProxyClient,
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--proxy-client-cert-file=" + proxyCert,
				"--proxy-client-key-file=" + proxyKey,
			}, c.apiServerNodeArgs()...),
			health: func(ctx context.Context) error {
				return c.probe(ctx, clusterTLS, "https://"+c.apiAddr()+"/readyz", "ok")
			},
			after: func(ctx context.Context) error { return c.bootstrap(ctx, inst) },
		},
		{
			name:  ControllerManager,
			addrs: []string{loopback(p.ControllerManager)},
			args: []string{
				"--kubeconfig=" + c.componentKubeconfig(ControllerManager),
				"--authentication-kubeconfig=" + c.componentKubeconfig(ControllerManager),
				"--authorization-kubeconfig=" + c.componentKubeconfig(ControllerManager),
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p.ControllerManager),
				"--tls-cert-file=" + kcmCert,
				"--tls-private-key-file=" + kcmKey,
				"--leader-elect=false",
				"--use-service-account-credentials=true",
				"--service-account-private-key-file=" + set.ServiceAccountKey,
				"--root-ca-file=" + set.CACert,
				"--cluster-signing-cert-file=" + set.CACert,
				"--cluster-signing-key-file=" + set.CAKey,
				// No cloud and no pod network to allocate: those controllers would only fail.
				"--controllers=*,-cloud-node-lifecycle-controller,-node-ipam-controller,-node-route-controller,-service-lb-controller",
				// Dynamic volumes for the default StorageClass (see storage.go).
				"--enable-hostpath-provisioner=true",
				"--profiling=false",
			},
			health: func(ctx context.Context) error {
				return c.probe(ctx, clusterTLS, "https://"+loopback(p.ControllerManager)+"/healthz", "ok")
			},
		},
		{
			name:  Scheduler,
			addrs: []string{loopback(p.Scheduler)},
			args: []string{
				"--kubeconfig=" + c.componentKubeconfig(Scheduler),
				"--authentication-kubeconfig=" + c.componentKubeconfig(Scheduler),
				"--authorization-kubeconfig=" + c.componentKubeconfig(Scheduler),
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p.Scheduler),
				"--tls-cert-file=" + schedCert,
				"--tls-private-key-file=" + schedKey,
				"--leader-elect=false",
				"--profiling=false",
			},
			health: func(ctx context.Context) error {
				return c.probe(ctx, clusterTLS, "https://"+loopback(p.Scheduler)+"/healthz", "ok")
			},
		},
	}
}

// kwokNode are the components of a kwok node: kwok, and OLM's operators on
// the host (pods never run).
func (c *Cluster) kwokNode(stages string) []component {
	p := c.state.Ports
	olmCert, olmKey := c.pki().Cert(OLM + "-serving")
	return []component{
		{
			name:  Kwok,
			addrs: []string{loopback(p.Kwok)},
			args: []string{
				"--kubeconfig=" + c.componentKubeconfig(Kwok),
				"--config=" + stages,
				"--config=" + c.kwokStagesFile(),
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
				"--cidr=" + podCIDR,
				"--node-ip=127.0.0.1",
				"--server-address=" + loopback(p.Kwok),
			},
			before: func(context.Context) error { return c.writeKwokStages() },
			health: func(ctx context.Context) error {
				return c.probe(ctx, plainHTTP, "http://"+loopback(p.Kwok)+"/healthz", "")
			},
		},
		{
			name:  OLM,
			addrs: []string{fmt.Sprintf(":%d", olmHealthPort)},
			args: []string{
				"--namespace=" + OLMNamespace,
				"--writeStatusName=",
				"--tls-cert=" + olmCert,
				"--tls-key=" + olmKey,
			},
			env: []string{"KUBECONFIG=" + c.componentKubeconfig(OLM)},
			health: func(ctx context.Context) error {
				return c.probe(ctx, clusterTLS, fmt.Sprintf("https://127.0.0.1:%d/healthz", olmHealthPort), "")
			},
		},
		{
			name:  Catalog,
			addrs: []string{fmt.Sprintf(":%d", catalogHealthPort)},
			args: []string{
				"--kubeconfig=" + c.componentKubeconfig(Catalog),
				"--namespace=" + OLMNamespace,
				"--writeStatusName=",
			},
			health: func(ctx context.Context) error {
				return c.probe(ctx, plainHTTP, fmt.Sprintf("http://127.0.0.1:%d/healthz", catalogHealthPort), "")
			},
		},
	}
}
