package preflight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// widgetCRD is the CRD of the tests, version v1alpha1, with spec
// properties edited by each case.
func widgetCRD(edit func(props map[string]apiextensionsv1.JSONSchemaProps, spec *apiextensionsv1.JSONSchemaProps)) *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"replicaCount": {Type: "integer", Maximum: ptr.To(10.0)},
		"color":        {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
		"name":         {Type: "string"},
	}
	spec := apiextensionsv1.JSONSchemaProps{Type: "object"}
	if edit != nil {
		edit(props, &spec)
	}
	spec.Properties = props
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// The CRs on the cluster, by namespace/name, with their spec.
var widgets = map[string]map[string]any{
	"a/small": {"replicaCount": int64(1), "color": "red"},
	"a/big":   {"replicaCount": int64(8), "color": "blue", "name": "big"},
	"b/plain": {"name": "plain"},
}

func TestCheck(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD(nil)}})
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}
	for _, ns := range []string{"a", "b"} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for id, spec := range widgets {
		ns, name, _ := strings.Cut(id, "/")
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}}
		if err := createWhenServed(ctx, dyn, gvr, u); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
	}

	tests := []struct {
		name string
		edit func(props map[string]apiextensionsv1.JSONSchemaProps, spec *apiextensionsv1.JSONSchemaProps)
		// want are "namespace/name field problem" lines
		want []string
	}{
		{name: "unchanged"},
		{name: "optional field added", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			p["size"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}},
		{name: "field removed", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			delete(p, "name")
		}, want: []string{"a/big spec.name pruned", "b/plain spec.name pruned"}},
		{name: "enum narrowed", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			p["color"] = apiextensionsv1.JSONSchemaProps{Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}}}
		}, want: []string{"a/big spec.color rejected"}},
		{name: "type changed", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			p["replicaCount"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}, want: []string{"a/big spec.replicaCount rejected", "a/small spec.replicaCount rejected"}},
		{name: "maximum lowered", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			p["replicaCount"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Maximum: ptr.To(5.0)}
		}, want: []string{"a/big spec.replicaCount rejected"}},
		{name: "required added", edit: func(_ map[string]apiextensionsv1.JSONSchemaProps, s *apiextensionsv1.JSONSchemaProps) {
			s.Required = []string{"name"}
		}, want: []string{"a/small spec.name rejected"}},
		{name: "default added, valid", edit: func(p map[string]apiextensionsv1.JSONSchemaProps, _ *apiextensionsv1.JSONSchemaProps) {
			p["color"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"red"`)},
				Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(ctx, cfg, []*apiextensionsv1.CustomResourceDefinition{widgetCRD(tt.edit)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, fmt.Sprintf("%s/%s %s %s", p.Namespace, p.Name, p.Field, p.Kind))
				if p.CRD != "widgets.example.com" || p.Version != "v1alpha1" || p.Message == "" {
					t.Errorf("problem %+v lacks its CRD, version or message", p)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems %q, want %q\n%v", got, tt.want, rep.Problems)
			}
			if len(rep.CRDs) != 1 || rep.CRDs[0].CRs != len(widgets) || rep.CRDs[0].New {
				t.Errorf("CRDs %+v, want widgets with %d CRs checked", rep.CRDs, len(widgets))
			}
			if rep.OK() != (len(tt.want) == 0) {
				t.Errorf("OK() = %v", rep.OK())
			}
		})
	}

	t.Run("a CRD the cluster lacks", func(t *testing.T) {
		other := widgetCRD(nil)
		other.Name, other.Spec.Names.Plural, other.Spec.Names.Singular = "gadgets.example.com", "gadgets", "gadget"
		rep, err := Check(ctx, cfg, []*apiextensionsv1.CustomResourceDefinition{other})
		if err != nil || !rep.OK() || len(rep.CRDs) != 1 || !rep.CRDs[0].New {
			t.Errorf("report %+v, error %v; want gadgets new and nothing to check", rep, err)
		}
	})
}

// createWhenServed creates u, retrying while the API server starts serving
// the CRD envtest just installed.
func createWhenServed(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
	var err error
	for range 50 {
		if _, err = dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// A new CRD that drops a version the cluster's CRD still lists in
// status.storedVersions is refused, by name; once the CRs are migrated and
// the list trimmed (chartpilot olm migrate), the same CRD passes.
func TestCheckStoredVersions(t *testing.T) {
	two := widgetCRD(nil)
	beta := *two.Spec.Versions[0].DeepCopy()
	two.Spec.Versions[0].Storage = false
	beta.Name = "v1beta1"
	two.Spec.Versions = append(two.Spec.Versions, beta)
	cfg := clustertest.StartAPIServer(t, &envtest.Environment{CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD(nil)}})
	ctx := t.Context()
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	cur, err := crds.Get(ctx, two.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions = two.Spec.Versions
	if _, err := crds.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	betaOnly := widgetCRD(nil)
	betaOnly.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{beta}
	betaOnly.Spec.Versions[0].Storage = true

	rep, err := Check(ctx, cfg, []*apiextensionsv1.CustomResourceDefinition{betaOnly})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || len(rep.StoredVersionsDropped) != 1 || !strings.Contains(rep.StoredVersionsDropped[0].Detail, "v1alpha1") {
		t.Fatalf("dropping v1alpha1 while storedVersions holds it: %+v", rep)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "chartpilot olm migrate") {
		t.Errorf("the report does not say what to do: %v\n%s", err, text.String())
	}
	cur, err = crds.Get(ctx, two.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status.StoredVersions = []string{"v1beta1"}
	if _, err := crds.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, err = Check(ctx, cfg, []*apiextensionsv1.CustomResourceDefinition{betaOnly}); err != nil || !rep.OK() {
		t.Errorf("after storedVersions were trimmed: %+v, %v; want OK", rep, err)
	}
}
