package cluster

import (
	"fmt"
	"net"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/pki"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

const (
	// adminUser is the kubeconfig's user: a client certificate in system:masters.
	adminUser = "admin"
	// ContextName names the cluster, user and context in the admin kubeconfig.
	ContextName = "chartpilot"
)

// pkiRequest is every certificate the cluster uses. Components that stand in
// for cluster add-ons (kwok, OLM) run as cluster admins, as their upstream
// manifests grant them.
func pkiRequest() pki.Request {
	masters := []string{"system:masters"}
	return pki.Request{
		Clients: []pki.Identity{
			{Name: adminUser, User: "chartpilot-admin", Groups: masters},
			{Name: ControllerManager, User: "system:kube-controller-manager"},
			{Name: Scheduler, User: "system:kube-scheduler"},
			{Name: Kwok, User: "chartpilot:kwok", Groups: masters},
			{Name: OLM, User: "chartpilot:olm", Groups: masters},
			{Name: Catalog, User: "chartpilot:catalog", Groups: masters},
			{Name: Catalogd, User: "chartpilot:" + Catalogd, Groups: masters},
			{Name: OperatorController, User: "chartpilot:" + OperatorController, Groups: masters},
			{Name: frontProxyClient},
			{Name: kubeletClient, User: "system:node:" + NodeName, Groups: []string{"system:nodes"}},
			{Name: proxyClient, User: "system:kube-proxy"},
			{Name: apiKubeletClient, User: apiKubeletClient},
			{Name: SnapshotController, User: "chartpilot:" + SnapshotController, Groups: []string{csiGroup}},
			{Name: CSIProvisioner, User: "chartpilot:" + CSIProvisioner, Groups: []string{csiGroup}},
			{Name: CSISnapshotter, User: "chartpilot:" + CSISnapshotter, Groups: []string{csiGroup}},
		},
		Servers: []pki.Serving{
			{
				Name: APIServer,
				DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
					"kubernetes.default.svc.cluster.local"},
				IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1), net.ParseIP(node.HostIP)},
			},
			{Name: kubeletServing, DNSNames: []string{NodeName}, IPs: []net.IP{net.ParseIP(node.NodeIP)}},
			{Name: ControllerManager + "-serving", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
			{Name: Scheduler + "-serving", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
			{Name: OLM + "-serving", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
			{
				Name: catalogdServing,
				DNSNames: []string{"localhost", catalogdService + "." + OLMv1Namespace + ".svc",
					catalogdService + "." + OLMv1Namespace + ".svc.cluster.local"},
				IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(node.HostIP)},
			},
		},
	}
}

// writeKubeconfigs writes the admin kubeconfig (self-contained, to hand to
// users) and one per component (referring to the files in the state dir).
func (c *Cluster) writeKubeconfigs() error {
	set := c.pki()
	server := "https://" + c.apiAddr()

	ca, err := os.ReadFile(set.CACert)
	if err != nil {
		return err
	}
	certFile, keyFile := set.Cert(adminUser)
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	admin := kubeconfig(server,
		&clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca},
		&clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key})
	if err := writeKubeconfig(c.KubeconfigPath(), admin); err != nil {
		return err
	}

	for _, name := range []string{ControllerManager, Scheduler, Kwok, OLM, Catalog, Catalogd, OperatorController, Kubelet, KubeProxy, SnapshotController, CSIProvisioner, CSISnapshotter} {
		certFile, keyFile := set.Cert(name)
		cfg := kubeconfig(server,
			&clientcmdapi.Cluster{Server: server, CertificateAuthority: set.CACert},
			&clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile})
		if err := writeKubeconfig(c.componentKubeconfig(name), cfg); err != nil {
			return err
		}
	}
	return nil
}

func kubeconfig(server string, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ContextName] = cluster
	cfg.AuthInfos[ContextName] = user
	cfg.Contexts[ContextName] = &clientcmdapi.Context{Cluster: ContextName, AuthInfo: ContextName}
	cfg.CurrentContext = ContextName
	return cfg
}

func writeKubeconfig(path string, cfg *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	// It holds a private key: owner only.
	return atomicfile.WriteFile(path, data, 0o600)
}
