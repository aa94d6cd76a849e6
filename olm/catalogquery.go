package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/chartpilot/chartpilot/internal/podhealth"
)

// CatalogContent is what a CatalogSource's registry server answered to
// OLM's registry API.
type CatalogContent struct {
	// Packages are the names of the packages it serves, sorted.
	Packages []string `json:"packages"`
}

// CatalogQueryTimeout bounds ObserveCatalog: a registry that does not
// answer in that time is left undiagnosed.
const CatalogQueryTimeout = 15 * time.Second

// registryPort is the port OLM's registry pods serve the registry API on
// when their spec names none ("grpc").
const registryPort = 50051

// ObserveCatalog asks the registry server of o's CatalogSource which
// packages it serves (ListPackages), so that Diagnose can tell a catalog
// that serves nothing, or not the package, from one OLM cannot reach. It
// asks only a READY CatalogSource: at its spec.address, or through a port
// forward to its registry pod. It sets o.Catalog, or o.CatalogError when the
// registry could not be asked; it changes nothing in the cluster.
func ObserveCatalog(ctx context.Context, cfg *rest.Config, o *Observed) {
	cs := o.CatalogSource
	if cs == nil || cs.Status.GRPCConnectionState == nil || cs.Status.GRPCConnectionState.LastObservedState != "READY" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, CatalogQueryTimeout)
	defer cancel()
	pkgs, err := listCatalogPackages(ctx, cfg, cs, o.CatalogPods)
	if err != nil {
		o.CatalogError = err.Error()
		return
	}
	o.Catalog = &CatalogContent{Packages: pkgs}
}

func listCatalogPackages(ctx context.Context, cfg *rest.Config, cs *v1alpha1.CatalogSource, pods []corev1.Pod) ([]string, error) {
	addr := cs.Spec.Address
	if addr == "" {
		pod, port, err := registryPod(cs, pods)
		if err != nil {
			return nil, err
		}
		local, stop, err := forwardPort(ctx, cfg, pod, port)
		if err != nil {
			return nil, fmt.Errorf("forwarding a port to the registry pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		defer stop()
		addr = local
	}
	pkgs, err := listPackages(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("listing the packages of catalogsource %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	return pkgs, nil
}

// registryPod picks a ready pod of the CatalogSource, and its registry port.
func registryPod(cs *v1alpha1.CatalogSource, pods []corev1.Pod) (*corev1.Pod, int, error) {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || !podhealth.Ready(p) {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == "grpc" {
					return p, int(cp.ContainerPort), nil
				}
			}
		}
		return p, registryPort, nil
	}
	return nil, 0, fmt.Errorf("catalogsource %s/%s has no ready registry pod", cs.Namespace, cs.Name)
}

// listPackages calls ListPackages on the registry server at addr.
func listPackages(ctx context.Context, addr string) ([]string, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := api.NewRegistryClient(conn).ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		return nil, err
	}
	pkgs := []string{}
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p.GetName())
	}
	slices.Sort(pkgs)
	return pkgs, nil
}

// forwardPort forwards a port on loopback to port of pod through the API
// server, as kubectl port-forward does, and returns its address. stop ends
// the forward.
func forwardPort(ctx context.Context, cfg *rest.Config, pod *corev1.Pod, port int) (addr string, stop func(), err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return "", nil, err
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(port)}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	stop = func() {
		close(stopCh)
		<-done
	}
	select {
	case <-readyCh:
	case err := <-done:
		return "", nil, err
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return "", nil, fmt.Errorf("no forwarded port: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))), stop, nil
}
