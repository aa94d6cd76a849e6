package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/crdready"
)

// NodeName is the kwok node every pod of the local cluster lands on.
const NodeName = "chartpilot-node"

const fieldManager = "chartpilot-cluster"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// bootstrap prepares the fresh API server for OLM and kwok: OLM's namespaces
// and CRDs, and the node kwok will manage.
func (c *Cluster) bootstrap(ctx context.Context, inst *toolchain.Installation) error {
	began := time.Now()
	cs, dyn, err := c.clients()
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
	var names []string
	if v0 {
		for _, ns := range []string{OLMNamespace, OperatorsNamespace} {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", ns, err)
			}
		}
		if names, err = applyCRDs(ctx, dyn, inst.OLMCRDs); err != nil {
			return err
		}
	}
	if v1 {
		crds, err := c.bootstrapOLMv1(ctx, inst.OLMv1CRDs)
		if err != nil {
			return err
		}
		names = append(names, crds...)
	}
	monitoring, err := applyMonitoringCRDs(ctx, dyn)
	if err != nil {
		return err
	}
	names = append(names, monitoring...)
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	// OLM's operators start next and map its kinds through discovery.
	if err := crdready.Wait(ctx, cfg, names, crdready.Options{Timeout: c.opts.StartTimeout}); err != nil {
		return fmt.Errorf("waiting for OLM's CRDs: %w", err)
	}
	fmt.Fprintf(c.opts.Out, "  %-24s %d CRDs (OLM's, ServiceMonitor, PrometheusRule) established and served, namespaces %s in %s\n",
		"bootstrap", len(names), strings.Join(c.olmNamespaces(), ", "), time.Since(began).Round(10*time.Millisecond))
	return nil
}

// applyCRDs server-side applies every CRD in dir (OLM's CSV CRD is too large
// for a client-side apply annotation) and returns their names.
func applyCRDs(ctx context.Context, dyn dynamic.Interface, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decoding %s: %w", f, err)
			}
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			body, err := obj.MarshalJSON()
			if err != nil {
				return nil, err
			}
			force := true
			if _, err := dyn.Resource(crdResource).Patch(ctx, obj.GetName(), types.ApplyPatchType, body,
				metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
				return nil, fmt.Errorf("applying CRD %s from %s: %w", obj.GetName(), f, err)
			}
			names = append(names, obj.GetName())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no CRDs found in %s", dir)
	}
	return names, nil
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
