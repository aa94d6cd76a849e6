package reconciler

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/release"
)

// Marks a rendered object carries so the operator finds its CR again.
const (
	// ManagedLabel marks every object of every release the operator manages;
	// its cache of dependent objects selects on it.
	ManagedLabel = "chartpilot/managed"
	// Objects an owner reference cannot point from (cluster-scoped objects
	// of a namespaced CR, objects in other namespaces) name their CR in
	// these annotations, operator-sdk's.
	PrimaryResourceAnnotation     = release.PrimaryResourceAnnotation
	PrimaryResourceTypeAnnotation = release.PrimaryResourceTypeAnnotation
)

// ownerRenderer is a Helm post-renderer that ties every rendered object to
// the CR: an owner reference where Kubernetes allows one, annotations
// otherwise, and the managed label. It adds the HPAs the CR asks for and
// leaves the replicas of HPA-scaled workloads out (package autoscale).
type ownerRenderer struct {
	owner  *unstructured.Unstructured
	mapper meta.RESTMapper
	// labels are added to every object (Options.Labels).
	labels map[string]string
	// autoscale is what the CR's autoscaling field asks for; nil for nothing.
	autoscale *autoscale.Spec
}

func (r ownerRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	objs, err := decodeAll(rendered)
	if err != nil {
		return nil, err
	}
	objs = autoscale.Render(objs, r.autoscale)
	out := &bytes.Buffer{}
	ownerGVK := r.owner.GroupVersionKind()
	ref := metav1.OwnerReference{
		APIVersion: ownerGVK.GroupVersion().String(), Kind: ownerGVK.Kind,
		Name: r.owner.GetName(), UID: r.owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	for _, obj := range objs {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ManagedLabel] = "true"
		maps.Copy(labels, r.labels)
		obj.SetLabels(labels)
		labelPodTemplate(obj)
		if r.ownable(obj) {
			obj.SetOwnerReferences(append(obj.GetOwnerReferences(), ref))
		} else {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[PrimaryResourceAnnotation] = r.owner.GetNamespace() + "/" + r.owner.GetName()
			ann[PrimaryResourceTypeAnnotation] = ownerGVK.GroupKind().String()
			obj.SetAnnotations(ann)
		}
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out, nil
}

// decodeAll reads the objects of a rendered manifest, skipping empty documents.
func decodeAll(rendered *bytes.Buffer) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(rendered, 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if err == io.EOF {
				return objs, nil
			}
			return nil, fmt.Errorf("post-rendering: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// ownable: an owner reference may point from obj to the CR when both are in
// one namespace, or the CR is cluster-scoped.
func (r ownerRenderer) ownable(obj *unstructured.Unstructured) bool {
	if r.owner.GetNamespace() == "" {
		return true
	}
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	err := fmt.Errorf("no mapper")
	if r.mapper != nil {
		mapping, err = r.mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	}
	if err != nil {
		// Unknown kind (a CRD the chart installs): assume namespaced, as
		// most are, when it names no other namespace.
		return obj.GetNamespace() == "" || obj.GetNamespace() == r.owner.GetNamespace()
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return false
	}
	return obj.GetNamespace() == "" || obj.GetNamespace() == r.owner.GetNamespace()
}

// podTemplateKinds are the workloads whose pods get the managed label, so
// that the operator's cache holds them and the CR's status can say why they
// are not healthy. Not Jobs: their template is immutable, and labelling it
// would fail the upgrade of a release installed before.
var podTemplateKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
}

func labelPodTemplate(obj *unstructured.Unstructured) {
	if !podTemplateKinds[obj.GroupVersionKind().GroupKind()] {
		return
	}
	if _, ok, err := unstructured.NestedMap(obj.Object, "spec", "template"); !ok || err != nil {
		return
	}
	labels, _, err := unstructured.NestedStringMap(obj.Object, "spec", "template", "metadata", "labels")
	if err != nil {
		return
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedLabel] = "true"
	_ = unstructured.SetNestedStringMap(obj.Object, labels, "spec", "template", "metadata", "labels")
}

// labelsDigest identifies the labels the post-renderer adds beyond the
// managed label, in the release's digest; "" for none, so that releases
// made without them keep their digest.
func labelsDigest(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "label %s=%s\n", k, labels[k])
	}
	return b.String()
}

// joinDigests joins what identifies two additions of the post-renderer.
func joinDigests(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
