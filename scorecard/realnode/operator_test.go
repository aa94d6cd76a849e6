package realnode

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/operator"
	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// startOperator creates the namespaces and runs the project's operator in
// the test's process, watching them, with movers of image. The returned
// function stops it and waits until it has stopped.
func startOperator(t *testing.T, cfg *rest.Config, projectDir, image string, namespaces ...string) (stop func()) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for _, ns := range namespaces {
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := watches.Load(filepath.Join(projectDir, "watches.yaml"), watches.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := operator.New(operator.Options{Watches: ws, Config: cfg, Namespaces: namespaces,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true, MoverImage: image})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() { cancel(); <-done }
}

// crs reaches the custom resources of the project's kinds.
type crs struct {
	t   *testing.T
	dyn dynamic.Interface
}

// resource is the kind gvk's resource in namespace ns.
func (c crs) resource(gvk schema.GroupVersionKind, ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(gvk.GroupVersion().WithResource(api.Plural(gvk.Kind))).Namespace(ns)
}

// create creates the CR name of kind gvk in ns with spec.
func (c crs) create(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) {
	c.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	if _, err := c.resource(gvk, ns).Create(c.t.Context(), u, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("creating %s %s: %v", gvk.Kind, name, err)
	}
}
