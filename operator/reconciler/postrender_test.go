package reconciler

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/autoscale"
)

// The HPA the post renderer adds is tied to the CR like the chart's objects,
// and the workload it scales is left without replicas.
func TestOwnerRendererAutoscale(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}, meta.RESTScopeNamespace)
	rendered := `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  template: {metadata: {labels: {app: web}}}
`
	tests := []struct {
		name string
		spec *autoscale.Spec
		// want: kind of each object out, and whether the Deployment keeps
		// its replicas.
		want         []string
		keepReplicas bool
	}{
		{name: "off", spec: nil, want: []string{"Deployment"}, keepReplicas: true},
		{name: "on", spec: &autoscale.Spec{Enabled: true, MinReplicas: 1, MaxReplicas: 3, TargetCPUUtilizationPercentage: 80},
			want: []string{"Deployment", "HorizontalPodAutoscaler"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ownerRenderer{owner: owner("ns"), mapper: mapper, autoscale: tt.spec}.Run(bytes.NewBufferString(rendered))
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, doc := range strings.Split(out.String(), "---\n") {
				if strings.TrimSpace(doc) == "" {
					continue
				}
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, u.GetKind())
				if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "uid-1" {
					t.Errorf("%s: owner references %v", u.GetKind(), refs)
				}
				if u.GetLabels()[ManagedLabel] != "true" {
					t.Errorf("%s: labels %v", u.GetKind(), u.GetLabels())
				}
				if u.GetKind() == "Deployment" {
					_, has, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
					if has != tt.keepReplicas {
						t.Errorf("Deployment has replicas: %v, want %v", has, tt.keepReplicas)
					}
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("objects %v, want %v", kinds, tt.want)
			}
		})
	}
}

// The post renderer's extra labels (a shard's) go on every object, not on
// pod templates (a change would roll the pods), and into the release's
// digest; without them the digest is what it was before they existed.
func TestOwnerRendererLabels(t *testing.T) {
	rendered := `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  template: {metadata: {labels: {app: web}}}
`
	shard := map[string]string{"sharding.example.com/key": "a"}
	out, err := ownerRenderer{owner: owner("ns"), labels: shard}.Run(bytes.NewBufferString(rendered))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(bytes.TrimPrefix(out.Bytes(), []byte("---\n")), &u.Object); err != nil {
		t.Fatal(err)
	}
	if got := u.GetLabels(); got["sharding.example.com/key"] != "a" || got["app"] != "web" || got[ManagedLabel] != "true" {
		t.Errorf("labels %v", got)
	}
	tmpl, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
	if _, ok := tmpl["sharding.example.com/key"]; ok || tmpl[ManagedLabel] != "true" {
		t.Errorf("pod template labels %v", tmpl)
	}

	// Releases of the operator of no shard keep their digest.
	if got := joinDigests(labelsDigest(nil), ""); got != "" {
		t.Errorf("no labels, no autoscaling: %q", got)
	}
	if got := joinDigests(labelsDigest(nil), "hpa"); got != "hpa" {
		t.Errorf("no labels, autoscaling: %q", got)
	}
	a, b := labelsDigest(shard), labelsDigest(map[string]string{"sharding.example.com/key": "b"})
	if a == "" || a == b || joinDigests(a, "hpa") == a {
		t.Errorf("shards a and b: %q and %q", a, b)
	}
}
