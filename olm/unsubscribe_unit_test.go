package olm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// When the reads of the custom resources fail until the wait for their
// finalizers ends, the error says the finalizers did not run and what the
// last read said: the poll's error is not thrown away. The API server's
// failure is injected into its client's reads.
func TestDeleteCRsReportsTheLastReadError(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "test.chartpilot.dev", Version: "v1", Kind: "Widget"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widget.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widget.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: widget.Kind, ListKind: widget.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: widget.Version, Served: true, Storage: true}},
		},
	}
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(widget)
	cr.SetNamespace("ns")
	cr.SetName("w")
	cr.SetFinalizers([]string{"helm.sdk.operatorframework.io/uninstall-release"})

	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widget, meta.RESTScopeNamespace)
	mapper.Add(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), meta.RESTScopeRoot)
	boom := errors.New("etcdserver: request timed out")
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(crd, cr).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind() == widget {
				return boom
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()

	u := &unsubscriber{c: c, opts: UnsubscribeOptions{Timeout: time.Second}, res: &UnsubscribeResult{}}
	err := u.deleteCRs(t.Context(), []string{crd.Name})
	if !errors.Is(err, ErrFinalizersPending) || !errors.Is(err, boom) {
		t.Fatalf("error %v, want ErrFinalizersPending and the last read's error", err)
	}
	for _, want := range []string{"Widget ns/w (finalizers helm.sdk.operatorframework.io/uninstall-release)", "last error reading them: etcdserver: request timed out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}
