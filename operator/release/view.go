package release

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/chartpilot/chartpilot/operator/health"
)

// An informer cache of the objects of releases holds views of them, not the
// objects: their metadata and their readiness, computed from the whole
// object as the watch delivers it. That is what a reconcile of a release in
// sync reads: an object whose resourceVersion (or, for kinds that count
// them, generation) is the one last found as desired has not changed but
// for its metadata, compared here, and its status, summed up in the view.
// An object changed since is read whole from the API server and compared.
// A Deployment's view is a tenth of the object. The view of an object that
// is not healthy keeps its problem (package health), and a workload's the
// selector of its pods: pods are cached as views too, each with its problem,
// so the health of a release is read from views alone.

// A view keeps what it adds to the object's metadata as top-level fields
// that no Kubernetes object has, beside apiVersion, kind and metadata: one
// small map per view.
const (
	// viewKey holds the readiness (a kstatus); it marks a view.
	viewKey = "chartpilot.view"
	// messageKey holds why the object is not ready, if it says.
	messageKey = "chartpilot.message"
	// problemKey holds the object's health problem, if it has one.
	problemKey = "chartpilot.problem"
	// contentKey holds, in the view of an object of a kind that counts no
	// generation (a ConfigMap, a Service, an HPA), the digest of all of it
	// but its metadata and status: what a change to what the release set
	// changes, and a status write (an HPA's, at every sync) does not.
	contentKey = "chartpilot.content"
	// metadataKey holds the digest of the metadata a release sets and
	// others may change (metadataDigest): labels, annotations, owner
	// references and finalizers are summed up, not kept.
	metadataKey = "chartpilot.metadata"
	// ownerKey holds the controller owner reference, as ownerString.
	ownerKey = "chartpilot.owner"
)

// viewMetadata are the metadata fields a view keeps: what names an object
// and says that it changed or is going away. Besides, it keeps the
// controller owner reference (ownerKey) and the primary-resource
// annotations, which map an event to its CR, and a pod's labels, by which
// a workload's pods are listed.
var viewMetadata = []string{"name", "namespace", "resourceVersion", "generation", "deletionTimestamp"}

// The annotations that name the CR of an object an owner reference cannot
// point from (cluster-scoped, or in another namespace): operator-sdk's.
const (
	PrimaryResourceAnnotation     = "operator-sdk/primary-resource"
	PrimaryResourceTypeAnnotation = "operator-sdk/primary-resource-type"
)

var stripManagedFields = cache.TransformStripManagedFields()

// ViewTransform turns the objects an informer receives into views (see
// above); objects other than unstructured ones (typed or metadata-only)
// only lose their managedFields. It is a client-go TransformFunc, for the
// cache that WithReader reads.
func ViewTransform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || isView(u) {
		return stripManagedFields(obj)
	}
	return view(u), nil
}

// view returns the view of u.
func view(u *unstructured.Unstructured) *unstructured.Unstructured {
	meta, _ := u.Object["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, k := range viewMetadata {
		if v, ok := meta[k]; ok {
			kept[k] = v
		}
	}
	if ann := primaryAnnotations(u.GetAnnotations()); ann != nil {
		kept["annotations"] = ann
	}
	if u.GetKind() == "Pod" && u.GetAPIVersion() == "v1" {
		kept["labels"] = meta["labels"]
	}
	v := map[string]any{
		"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": kept,
		viewKey: string(status.UnknownStatus), metadataKey: int64(metadataDigest(u)),
	}
	if res, err := status.Compute(u); err == nil {
		v[viewKey] = string(res.Status)
		if res.Message != "" {
			v[messageKey] = res.Message
		}
	}
	if ref := metav1.GetControllerOfNoCopy(u); ref != nil {
		v[ownerKey] = ownerString(ref)
	}
	if p := viewProblem(u); p != nil {
		v[problemKey] = p
	}
	if u.GetGeneration() == 0 {
		v[contentKey] = contentDigest(u)
	}
	return &unstructured.Unstructured{Object: v}
}

// ownerString is what a view keeps of its controller owner reference:
// what maps it to its owner, not the owner's UID.
func ownerString(ref *metav1.OwnerReference) string {
	return ref.APIVersion + "\x00" + ref.Kind + "\x00" + ref.Name
}

// ControllerOf is the controller owner reference of an object, or of its
// view (which keeps the owner's API version, kind and name only); nil if
// it has none.
func ControllerOf(u *unstructured.Unstructured) *metav1.OwnerReference {
	if !isView(u) {
		return metav1.GetControllerOfNoCopy(u)
	}
	s, _ := u.Object[ownerKey].(string)
	parts := strings.SplitN(s, "\x00", 3)
	if len(parts) != 3 {
		return nil
	}
	return &metav1.OwnerReference{APIVersion: parts[0], Kind: parts[1], Name: parts[2], Controller: ptr.To(true)}
}

// primaryAnnotations are the primary-resource annotations among ann, nil
// for none.
func primaryAnnotations(ann map[string]string) map[string]any {
	var out map[string]any
	for _, k := range []string{PrimaryResourceAnnotation, PrimaryResourceTypeAnnotation} {
		if v, ok := ann[k]; ok {
			if out == nil {
				out = map[string]any{}
			}
			out[k] = v
		}
	}
	return out
}

// metadataOf is metadataDigest of an object, or the one its view keeps.
func metadataOf(obj metav1.Object) uint64 {
	if u, ok := obj.(*unstructured.Unstructured); ok && isView(u) {
		d, _ := u.Object[metadataKey].(int64)
		return uint64(d)
	}
	return metadataDigest(obj)
}

// SameMetadata says whether two versions of an object (or their views) have
// the same metadata but for what controllers other than Helm keep there
// (see Bookkeeping) and what names the version.
func SameMetadata(a, b *unstructured.Unstructured) bool {
	return metadataOf(a) == metadataOf(b)
}

// viewProblem is what a view keeps of u's problem, nil when u is healthy.
func viewProblem(u *unstructured.Unstructured) map[string]any {
	p, bad := health.Object(u)
	if !bad {
		return nil
	}
	out := map[string]any{"reason": p.Reason}
	if p.Message != "" {
		out["message"] = p.Message
	}
	if health.IsWorkload(u) {
		if sel, err := health.PodSelector(u); err == nil {
			out["podSelector"] = sel.String()
		}
	}
	return out
}

// Problem is the health problem of an object or of its view, if it is not
// healthy.
func Problem(u *unstructured.Unstructured) (health.Problem, bool) {
	if !isView(u) {
		return health.Object(u)
	}
	p, ok := u.Object[problemKey].(map[string]any)
	if !ok {
		return health.Problem{}, false
	}
	reason, _ := p["reason"].(string)
	msg, _ := p["message"].(string)
	return health.Problem{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Reason: reason, Message: msg}, true
}

// podSelector is the selector of a workload's pods, from the workload or
// from the view of one that is not healthy.
func podSelector(u *unstructured.Unstructured) (labels.Selector, error) {
	if !isView(u) {
		return health.PodSelector(u)
	}
	p, _ := u.Object[problemKey].(map[string]any)
	s, _ := p["podSelector"].(string)
	if s == "" {
		return nil, fmt.Errorf("the view of %s %s/%s keeps no pod selector", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("reading the pod selector of %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return sel, nil
}

func isView(u *unstructured.Unstructured) bool {
	_, ok := u.Object[viewKey]
	return ok
}

// Readiness is the kstatus of an object or of its view, and why.
func Readiness(u *unstructured.Unstructured) (status.Status, string) {
	if st, ok := u.Object[viewKey].(string); ok {
		msg, _ := u.Object[messageKey].(string)
		return status.Status(st), msg
	}
	res, err := status.Compute(u)
	if err != nil {
		return status.UnknownStatus, err.Error()
	}
	return res.Status, res.Message
}

// Bookkeeping reports whether an annotation is one that controllers other
// than Helm keep on the objects of a release (a Deployment's revision, a
// claim's binding): a change of one is not a change to what the release
// set.
func Bookkeeping(key string) bool {
	prefix, _, _ := strings.Cut(key, "/")
	switch prefix {
	case "deployment.kubernetes.io", // revision, desired-replicas, max-replicas
		"pv.kubernetes.io",          // bind-completed, bound-by-controller
		"volume.kubernetes.io",      // selected-node, storage-provisioner
		"volume.beta.kubernetes.io", // storage-provisioner
		"endpoints.kubernetes.io":   // last-change-trigger-time
		return true
	}
	return false
}

// metadataDigest sums up what a release sets in an object's metadata, and
// what others may change there: labels, annotations but bookkeeping ones,
// owner references and finalizers. Equal digests of two versions of an
// object with the same generation mean the same object but for its status.
func metadataDigest(obj metav1.Object) uint64 {
	h := fnv.New64a()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj.GetLabels())) {
		write("l", k, obj.GetLabels()[k])
	}
	ann := obj.GetAnnotations()
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		if !Bookkeeping(k) {
			write("a", k, ann[k])
		}
	}
	for _, r := range obj.GetOwnerReferences() {
		write("o", r.APIVersion, r.Kind, r.Name, string(r.UID), fmt.Sprint(r.Controller != nil && *r.Controller))
	}
	for _, f := range obj.GetFinalizers() {
		write("f", f)
	}
	return h.Sum64()
}

// contentDigest sums up all of u but its metadata and status, for kinds that
// count no generation; "" if u cannot be summed up.
func contentDigest(u *unstructured.Unstructured) string {
	h := fnv.New64a()
	for _, k := range slices.Sorted(maps.Keys(u.Object)) {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		if strings.HasPrefix(k, "chartpilot.") {
			continue // a view's own
		}
		data, err := json.Marshal(u.Object[k]) // maps in key order
		if err != nil {
			return ""
		}
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// Content is the digest of all but the metadata and status of an object or
// of its view, for kinds that count no generation; "" for other kinds.
func Content(u *unstructured.Unstructured) string {
	if isView(u) {
		c, _ := u.Object[contentKey].(string)
		return c
	}
	if u.GetGeneration() != 0 {
		return ""
	}
	return contentDigest(u)
}
