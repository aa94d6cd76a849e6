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

// viewKey holds the readiness in a view; no Kubernetes object has such a
// top-level field.
const viewKey = "chartpilot.view"

// contentKey holds, in the view of an object of a kind that counts no
// generation (a ConfigMap, a Service, an HPA), the digest of all of it but
// its metadata and status: what a change to what the release set changes,
// and a status write (an HPA's, at every sync) does not.
const contentKey = "content"

// viewMetadata are the metadata fields a view keeps: the owner and release
// annotations and labels that map an event to its CR, what a release sets,
// and what says an object changed or is going away.
var viewMetadata = []string{
	"name", "namespace", "uid", "resourceVersion", "generation", "labels", "annotations",
	"ownerReferences", "finalizers", "deletionTimestamp",
}

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
	kept := make(map[string]any, len(viewMetadata))
	for _, k := range viewMetadata {
		if v, ok := meta[k]; ok {
			kept[k] = v
		}
	}
	readiness := map[string]any{"status": string(status.UnknownStatus)}
	if res, err := status.Compute(u); err == nil {
		readiness["status"] = string(res.Status)
		if res.Message != "" {
			readiness["message"] = res.Message
		}
	}
	if p := viewProblem(u); p != nil {
		readiness["problem"] = p
	}
	if u.GetGeneration() == 0 {
		readiness[contentKey] = contentDigest(u)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": kept, viewKey: readiness,
	}}
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
	r, ok := u.Object[viewKey].(map[string]any)
	if !ok {
		return health.Object(u)
	}
	p, ok := r["problem"].(map[string]any)
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
	r, ok := u.Object[viewKey].(map[string]any)
	if !ok {
		return health.PodSelector(u)
	}
	p, _ := r["problem"].(map[string]any)
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
	if r, ok := u.Object[viewKey].(map[string]any); ok {
		st, _ := r["status"].(string)
		msg, _ := r["message"].(string)
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
		case "apiVersion", "kind", "metadata", "status", viewKey:
			continue
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
	if r, ok := u.Object[viewKey].(map[string]any); ok {
		c, _ := r[contentKey].(string)
		return c
	}
	if u.GetGeneration() != 0 {
		return ""
	}
	return contentDigest(u)
}
