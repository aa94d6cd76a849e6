package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
)

// NodeName is the kwok node every pod of the local cluster lands on.
const NodeName = "chartpilot-node"

const fieldManager = "chartpilot-cluster"

// bootstrap prepares the fresh API server for OLM and kwok: OLM's namespaces
// and CRDs, and the node kwok will manage.
func (c *Cluster) bootstrap(ctx context.Context, inst *toolchain.Installation) error {
	began := time.Now()
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	if c.state.Node == NodeReal {
		// The kubelet registers the node itself.
		if err := allowKubeletAccess(ctx, cs); err != nil {
			return err
		}
	} else if err := registerNode(ctx, cs); err != nil {
		return err
	}
	if err := installStorageClass(ctx, cs); err != nil {
		return err
	}
	if c.state.WithoutOLM {
		fmt.Fprintf(c.opts.Out, "  %-24s ready in %s\n", "bootstrap", time.Since(began).Round(10*time.Millisecond))
		return nil
	}
	v0, v1 := c.olmVersions()
	var crds []*unstructured.Unstructured
	if v0 {
		for _, ns := range []string{OLMNamespace, OperatorsNamespace} {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", ns, err)
			}
		}
		if crds, err = crdsIn(inst.OLMCRDs); err != nil {
			return err
		}
	}
	if v1 {
		v1CRDs, err := c.bootstrapOLMv1(ctx, inst.OLMv1CRDs)
		if err != nil {
			return err
		}
		crds = append(crds, v1CRDs...)
	}
	monitoring, err := monitoringCRDs()
	if err != nil {
		return err
	}
	crds = append(crds, monitoring...)
	// OLM's operators start next and map its kinds through discovery.
	if err := c.applyCRDs(ctx, crds); err != nil {
		return fmt.Errorf("OLM's CRDs: %w", err)
	}
	fmt.Fprintf(c.opts.Out, "  %-24s %d CRDs (OLM's, ServiceMonitor, PrometheusRule) established and served, namespaces %s in %s\n",
		"bootstrap", len(crds), strings.Join(c.olmNamespaces(), ", "), time.Since(began).Round(10*time.Millisecond))
	return nil
}

// crdsIn reads the CRDs of dir's YAML files.
func crdsIn(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var crds []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		objs, err := decodeObjects(data, f)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if obj.GetKind() == "CustomResourceDefinition" {
				crds = append(crds, obj)
			}
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs found in %s", dir)
	}
	return crds, nil
}

// applyCRDs server-side applies crds (OLM's CSV CRD is too large for a
// client-side apply annotation) and waits until they are established and
// their kinds served.
func (c *Cluster) applyCRDs(ctx context.Context, crds []*unstructured.Unstructured) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	return apply.Apply(ctx, crds, apply.Options{Config: cfg, FieldManager: fieldManager, Timeout: c.opts.StartTimeout})
}

// registerNode creates the fake node kwok manages, with room for many pods:
// the operator's benchmark runs thousands of releases, each with a pod, and
// a pod left Pending for want of room would keep its release from ever
// becoming Ready.
func registerNode(ctx context.Context, cs kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("10000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", NodeName, err)
	}
	return nil
}

// allowKubeletAccess lets the API server's client of kubelets read logs and
// exec into containers, as kubeadm binds it.
func allowKubeletAccess(ctx context.Context, cs kubernetes.Interface) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "chartpilot:" + apiKubeletClient},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiKubeletClient}},
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("letting the API server reach the kubelet: %w", err)
	}
	return nil
}

func (c *Cluster) waitNodeReady(ctx context.Context) error {
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return nodeReady(n), nil
	})
	if err != nil {
		agent := Kwok
		if c.state.Node == NodeReal {
			agent = Kubelet
		}
		return fmt.Errorf("node %s did not become Ready (%s log: %s): %w", NodeName, agent, c.LogFile(agent), err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
