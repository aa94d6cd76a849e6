package storageversion_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/crdready"
	"github.com/chartpilot/chartpilot/operator/storageversion"
)

// world is one test's API server with a CRD widgets.<group> whose CRs were
// created in v1alpha1, then v1beta1 added as the storage version.
type world struct {
	cfg   *rest.Config
	ext   apiextensionsclient.Interface
	dyn   dynamic.Interface
	kube  kubernetes.Interface
	group string
	crd   string
	crs   map[string]map[string]any // namespace/name -> spec
}

func schemaProps() *apiextensionsv1.CustomResourceValidation {
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"color": {Type: "string"}, "size": {Type: "integer"},
			}},
		},
	}}
}

func version(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
	return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage, Schema: schemaProps()}
}

// newWorld makes the CRD in v1alpha1, creates n CRs in each of the
// namespaces, then adds v1beta1 as the storage version (unless
// alphaOnly).
func newWorld(t *testing.T, cfg *rest.Config, group string, namespaces []string, n int, alphaOnly bool) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{cfg: cfg, group: group, crd: "widgets." + group, crs: map[string]map[string]any{},
		ext: apiextensionsclient.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: w.crd},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1alpha1", true)},
		},
	}
	crds := w.ext.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitServed(t)
	for _, ns := range namespaces {
		if _, err := w.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			name := fmt.Sprintf("w%d", i)
			spec := map[string]any{"color": fmt.Sprintf("c%d", i), "size": int64(i)}
			cr := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1alpha1", "kind": "Widget",
				"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
			}}
			if _, err := w.dyn.Resource(w.gvr("v1alpha1")).Namespace(ns).Create(ctx, cr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			w.crs[ns+"/"+name] = spec
		}
	}
	if alphaOnly {
		return w
	}
	w.updateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{version("v1alpha1", false), version("v1beta1", true)}
	})
	if got := w.get(t).Status.StoredVersions; !slices.Equal(got, []string{"v1alpha1", "v1beta1"}) {
		t.Fatalf("storedVersions after adding v1beta1: %v", got)
	}
	return w
}

func (w *world) gvr(v string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: w.group, Version: v, Resource: "widgets"}
}

func (w *world) get(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := w.ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), w.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

func (w *world) updateCRD(t *testing.T, change func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	crd := w.get(t)
	change(crd)
	if _, err := w.ext.ApiextensionsV1().CustomResourceDefinitions().Update(context.Background(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitServed(t)
}

func (w *world) waitServed(t *testing.T) {
	t.Helper()
	if err := crdready.Wait(context.Background(), w.cfg, []string{w.crd}, crdready.Options{Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// dropAlpha removes v1alpha1 from the CRD (its status must no longer list
// it) and reads every CR in v1beta1: an object still encoded in v1alpha1
// in etcd cannot be read any more.
func (w *world) dropAlpha(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	w.updateCRD(t, func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{version("v1beta1", true)}
	})
	// The API server's handler for the CRD follows its change shortly:
	// once it no longer serves v1alpha1, it decodes with the new CRD.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := w.dyn.Resource(w.gvr("v1alpha1")).List(ctx, metav1.ListOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("v1alpha1 still served after it was dropped: %v", err)
	}
	list, err := w.dyn.Resource(w.gvr("v1beta1")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) != len(w.crs) {
		return fmt.Errorf("%d CRs read in v1beta1, want %d", len(list.Items), len(w.crs))
	}
	for _, item := range list.Items {
		spec, _, _ := unstructured.NestedMap(item.Object, "spec")
		want := w.crs[item.GetNamespace()+"/"+item.GetName()]
		if fmt.Sprint(spec) != fmt.Sprint(want) {
			return fmt.Errorf("%s/%s: spec %v, want %v", item.GetNamespace(), item.GetName(), spec, want)
		}
	}
	return nil
}

// asMigrator is cfg impersonating a user granted exactly what Migrate
// needs: CRDRules for the CRD, and CRVerbs on its CRs in all namespaces.
func asMigrator(t *testing.T, w *world, user string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	rules := append(storageversion.CRDRules(w.crd), rbacv1.PolicyRule{APIGroups: []string{w.group}, Resources: []string{"widgets"}, Verbs: storageversion.CRVerbs()})
	if _, err := w.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(w.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	// The authorizer sees the binding once its informer has it.
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, w.crd, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the migrator's rules never took effect: %v", err)
	}
	return cfg
}

// blockUpdates makes the API server refuse updates of the CR named name
// (a ValidatingAdmissionPolicy): a CR the migration cannot rewrite.
func blockUpdates(t *testing.T, w *world, name string) {
	t.Helper()
	ctx := context.Background()
	policy := "block-" + strings.ReplaceAll(w.group, ".", "-")
	_, err := w.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{w.group}, APIVersions: []string{"*"}, Resources: []string{"widgets"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", name), Message: "blocked by the test"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The policy takes effect once the API server's informer has it.
	cr, err := w.dyn.Resource(w.gvr("v1beta1")).Namespace("blocked").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := w.dyn.Resource(w.gvr("v1beta1")).Namespace("blocked").Update(ctx, cr, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "blocked by the test"), nil
	})
	if err != nil {
		t.Fatal("the admission policy never took effect")
	}
}

// Migrate on a real API server, as a user with only the rules it
// declares. The proof that every CR was rewritten: once storedVersions is
// trimmed, v1alpha1 is dropped from the CRD and every CR must still read,
// with its spec, in v1beta1. The control trims storedVersions without
// rewriting: the CRs then cannot be read, so the proof can fail.
func TestMigrate(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	tests := []struct {
		name       string
		namespaces []string
		perNS      int
		alphaOnly  bool // never gained v1beta1: nothing to migrate
		dryRun     bool
		control    bool // trim by hand, no rewrite
		blocked    bool // one CR the API server refuses to update
		rewritten  int
		trimmed    bool
		readable   bool // every CR reads in v1beta1 after dropping v1alpha1
		wantErr    string
	}{
		{name: "two namespaces", namespaces: []string{"a", "b"}, perNS: 3, rewritten: 6, trimmed: true, readable: true},
		// More CRs than a page: the list continues.
		{name: "pages", namespaces: []string{"p"}, perNS: 7, rewritten: 7, trimmed: true, readable: true},
		{name: "no CRs", rewritten: 0, trimmed: true, readable: true},
		{name: "control: trimmed without a rewrite", namespaces: []string{"c"}, perNS: 2, control: true, readable: false},
		{name: "nothing to migrate", namespaces: []string{"n"}, perNS: 1, alphaOnly: true},
		{name: "dry run", namespaces: []string{"d"}, perNS: 2, dryRun: true, rewritten: 2, trimmed: true},
		{name: "a CR refused", namespaces: []string{"blocked"}, perNS: 2, blocked: true, rewritten: 1, wantErr: "1 CR(s) of widgets.refused.example.com could not be rewritten in v1beta1, so status.storedVersions is kept"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			group := []string{"two", "pages", "none", "control", "alpha", "dry", "refused"}[i] + ".example.com"
			w := newWorld(t, cfg, group, tt.namespaces, tt.perNS, tt.alphaOnly)
			if tt.control {
				crd := w.get(t)
				crd.Status.StoredVersions = []string{"v1beta1"}
				if _, err := w.ext.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := w.dropAlpha(t); err == nil {
					t.Fatal("CRs never rewritten read after v1alpha1 was dropped: the proof proves nothing")
				} else {
					t.Logf("as expected, unmigrated CRs cannot be read: %v", err)
				}
				return
			}
			if tt.blocked {
				blockUpdates(t, w, "w1")
			}
			m, err := storageversion.New(asMigrator(t, w, "migrator-"+group), storageversion.Options{DryRun: tt.dryRun, PageSize: 3})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Migrate(ctx, w.crd)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "blocked/w1") {
					t.Fatalf("Migrate: %v, want an error naming blocked/w1: %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if res.Rewritten != tt.rewritten || res.Trimmed != tt.trimmed {
				t.Errorf("result %+v: rewritten %d, trimmed %v; want %d, %v", res, res.Rewritten, res.Trimmed, tt.rewritten, tt.trimmed)
			}
			t.Log(res)
			stored := w.get(t).Status.StoredVersions
			switch {
			case tt.alphaOnly:
				if !slices.Equal(stored, []string{"v1alpha1"}) {
					t.Errorf("storedVersions %v, want [v1alpha1] untouched", stored)
				}
				return
			case tt.trimmed && !tt.dryRun:
				if !slices.Equal(stored, []string{"v1beta1"}) {
					t.Fatalf("storedVersions %v after the migration, want [v1beta1]", stored)
				}
			default:
				if !slices.Equal(stored, []string{"v1alpha1", "v1beta1"}) {
					t.Fatalf("storedVersions %v, want them kept", stored)
				}
				return
			}
			if err := w.dropAlpha(t); (err == nil) != tt.readable {
				t.Errorf("reading every CR after dropping v1alpha1: %v, want readable %v", err, tt.readable)
			}
			// Again: nothing left to do.
			again, err := m.Migrate(ctx, w.crd)
			if err != nil || again.Rewritten != 0 || again.Trimmed {
				t.Errorf("second Migrate: %+v, %v; want nothing done", again, err)
			}
		})
	}
}
