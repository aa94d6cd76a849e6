package reconciler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/chartpilot/chartpilot/operator/health"
)

// Every field of Status has a place in StatusSchema: the API server's own
// pruning keeps a fully written status whole, and every JSON field of the
// Go types (walked by reflection, so a new field cannot be forgotten) has a
// property.
func TestStatusSchemaKeepsEverything(t *testing.T) {
	v1 := StatusSchema()
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	st := Status{ObservedGeneration: 3, DeployedRelease: &DeployedRelease{Name: "a", Version: 2, Chart: "c-1.0.0", AppVersion: "1", Digest: "d"},
		Health: &health.Summary{Unhealthy: 2, Problems: []health.Problem{
			{Kind: "Pod", Namespace: "ns", Name: "web-1", Reason: "CrashLoopBackOff", Message: "container web: last terminated with exit code 1 (Error)"},
			{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data", Reason: health.ReasonClaimPending, Message: "phase Pending"},
		}}}
	st.set(3, TypeDeployed, metav1.ConditionTrue, ReasonUpgradeSuccessful, "revision 2")
	st.Conditions[0].LastTransitionTime = metav1.NewTime(time.Unix(1700000000, 0))
	written, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		t.Fatal(err)
	}
	kept := runtime.DeepCopyJSONValue(written)
	if pruned := pruning.PruneWithOptions(kept, structural, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(pruned) > 0 {
		t.Errorf("the API server would prune %v", pruned)
	}
	if !reflect.DeepEqual(kept, any(written)) {
		t.Errorf("pruned status differs:\n%v\n%v", kept, written)
	}
	for _, missing := range missingProperties(reflect.TypeOf(Status{}), v1, "status") {
		t.Errorf("%s has no property in the schema", missing)
	}
}

// missingProperties lists the JSON fields of typ that schema lacks.
func missingProperties(typ reflect.Type, schema apiextensionsv1.JSONSchemaProps, path string) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() == reflect.Slice {
		if schema.Items == nil || schema.Items.Schema == nil {
			return []string{path + "[]"}
		}
		return missingProperties(typ.Elem(), *schema.Items.Schema, path+"[]")
	}
	if typ.Kind() != reflect.Struct || reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Marshaler]()) {
		return nil
	}
	var out []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		prop, ok := schema.Properties[name]
		if !ok {
			out = append(out, path+"."+name)
			continue
		}
		out = append(out, missingProperties(f.Type, prop, path+"."+name)...)
	}
	return out
}
