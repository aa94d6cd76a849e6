package operator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/internal/logtest"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// appVersion is a version of a test App CRD whose spec keeps any field.
func appVersion(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTrue()}
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": open, "status": open},
		}}}
}

func ptrTrue() *bool { t := true; return &t }

// An operator that starts on a CRD whose storage moved to v1beta1 migrates
// its CRs and trims storedVersions when it watches all namespaces: then
// v1alpha1 can be dropped and every CR still reads. One that watches some
// namespaces leaves storedVersions and says to run chartpilot olm migrate.
func TestStorageMigrationAtStart(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(restConfig)
	dyn := dynamic.NewForConfigOrDie(restConfig)
	kube := kubernetes.NewForConfigOrDie(restConfig)
	tests := []struct {
		name     string
		watchAll bool
	}{
		{name: "all namespaces", watchAll: true},
		{name: "some namespaces"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			group := fmt.Sprintf("migrate%d.example.com", i)
			crdName := "apps." + group
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: crdName},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
					Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "App", ListKind: "AppList", Plural: "apps", Singular: "app"},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{appVersion("v1alpha1", true)}},
			}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := crdready.Wait(ctx, restConfig, []string{crdName}, crdready.Options{}); err != nil {
				t.Fatal(err)
			}
			var namespaces []string
			for _, suffix := range []string{"a", "b"} {
				ns := fmt.Sprintf("migrate%d-%s", i, suffix)
				namespaces = append(namespaces, ns)
				if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				cr := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1alpha1", "kind": "App",
					"metadata": map[string]any{"name": "app", "namespace": ns}, "spec": map[string]any{"greeting": "hi from " + ns}}}
				if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "apps"}).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{appVersion("v1alpha1", false), appVersion("v1beta1", true)}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := crdready.WaitKinds(ctx, restConfig, []schema.GroupVersionKind{{Group: group, Version: "v1beta1", Kind: "App"}}, crdready.Options{}); err != nil {
				t.Fatal(err)
			}

			logs := &logtest.Lines{}
			startOperator(t, func(o *Options, w *watches.Watch) {
				w.Group, w.Version = group, "v1beta1"
				o.Log = logs.Logger(1)
				if !tt.watchAll {
					o.Namespaces = namespaces[:1]
				}
			})
			stored := func() []string {
				c, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return c.Status.StoredVersions
			}
			if !tt.watchAll {
				err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
					return logs.Find("run `chartpilot olm migrate "+crdName+"` as the cluster admin") != "", nil
				})
				if err != nil {
					t.Fatal("the operator watching one namespace never said to run chartpilot olm migrate")
				}
				if got := stored(); !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
					t.Errorf("storedVersions %v: an operator that sees one namespace must not trim them", got)
				}
				return
			}
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
				return slices.Equal(stored(), []string{"v1beta1"}), nil
			})
			if err != nil {
				t.Fatalf("storedVersions %v a minute after the operator started, want [v1beta1]", stored())
			}
			t.Log(logs.Find("storage migrated"))
			// The proof: v1alpha1 dropped, both CRs still read in v1beta1.
			cur, err = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{appVersion("v1beta1", true)}
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			beta := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "apps"})
			alpha := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "apps"})
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := alpha.List(ctx, metav1.ListOptions{})
				return err != nil, nil
			})
			if err != nil {
				t.Fatal("v1alpha1 still served after it was dropped")
			}
			list, err := beta.List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 2 {
				t.Fatalf("the CRs in v1beta1 after dropping v1alpha1: %v (%d)", err, len(list.Items))
			}
		})
	}
}
