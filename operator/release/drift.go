package release

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/health"
)

// Drift is one object of the release that differs in the cluster.
type Drift struct {
	// Object names it: "Kind namespace/name".
	Object string
	// Path is the first field that differs; empty when the object is gone.
	Path string
	// Deleted: the object is missing or being deleted.
	Deleted bool

	desired  *unstructured.Unstructured
	live     *unstructured.Unstructured
	resource dynamic.ResourceInterface
}

func (d Drift) String() string {
	switch {
	case d.Deleted && d.live != nil:
		return d.Object + ": being deleted"
	case d.Deleted:
		return d.Object + ": deleted"
	default:
		return fmt.Sprintf("%s: %s changed", d.Object, d.Path)
	}
}

// desiredObject is one object of a revision's manifest, ready to compare.
type desiredObject struct {
	id              string // "Kind namespace/name"
	gvk             schema.GroupVersionKind
	namespace, name string
	obj             *unstructured.Unstructured
	resource        dynamic.ResourceInterface
}

// builtManifest is a revision's manifest parsed into objects, kept while the
// revision is the release's deployed one: parsing it is most of what a
// reconcile of a release in sync costs.
type builtManifest struct {
	rel     *helmrelease.Release
	objects []desiredObject
}

// desired returns the objects of rel's manifest. Revisions read through the
// record index are the same value from one reconcile to the next, so their
// parse is reused.
func (c *Client) desired(cfg *action.Configuration, rel *helmrelease.Release) ([]desiredObject, error) {
	key := types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}
	c.builtMu.Lock()
	b, ok := c.built[key]
	c.builtMu.Unlock()
	if ok && b.rel == rel {
		return b.objects, nil
	}
	resources, err := cfg.KubeClient.Build(bytes.NewBufferString(rel.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of revision %d: %w", rel.Version, err)
	}
	objects := make([]desiredObject, 0, len(resources))
	for _, info := range resources {
		obj, err := toUnstructured(info.Object)
		if err != nil {
			return nil, err
		}
		d := desiredObject{
			id:        fmt.Sprintf("%s %s", info.Mapping.GroupVersionKind.Kind, info.Name),
			gvk:       info.Mapping.GroupVersionKind,
			namespace: info.Namespace,
			name:      info.Name,
			obj:       obj,
			resource:  c.dynamic.Resource(info.Mapping.Resource),
		}
		if info.Namespaced() {
			d.id = fmt.Sprintf("%s %s/%s", info.Mapping.GroupVersionKind.Kind, info.Namespace, info.Name)
			d.resource = c.dynamic.Resource(info.Mapping.Resource).Namespace(info.Namespace)
		}
		objects = append(objects, d)
	}
	c.builtMu.Lock()
	if c.built == nil {
		c.built = map[types.NamespacedName]builtManifest{}
	}
	c.built[key] = builtManifest{rel: rel, objects: objects}
	c.builtMu.Unlock()
	return objects, nil
}

// compare reads every object of the deployed revision from the cluster and
// reports which were deleted or changed, which are not ready, and the
// problems of those not healthy.
func (c *Client) compare(ctx context.Context, cfg *action.Configuration, rel *helmrelease.Release) (drift []Drift, notReady []string, problems []health.Problem, err error) {
	objects, err := c.desired(cfg, rel)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, o := range objects {
		live, err := c.get(ctx, o.resource, o.gvk, o.namespace, o.name)
		d := Drift{Object: o.id, desired: o.obj, resource: o.resource}
		switch {
		case apierrors.IsNotFound(err):
			d.Deleted = true
			drift = append(drift, d)
			continue
		case err != nil:
			return nil, nil, nil, fmt.Errorf("reading %s: %w", o.id, err)
		}
		d.live = live
		if live.GetDeletionTimestamp() != nil {
			d.Deleted = true
			drift = append(drift, d)
			continue
		}
		if d.Path = firstDifference(o.obj.Object, live.Object, ""); d.Path != "" {
			drift = append(drift, d)
			continue
		}
		res, err := status.Compute(live)
		if err == nil && res.Status != status.CurrentStatus {
			notReady = append(notReady, fmt.Sprintf("%s: %s %s", o.id, res.Status, res.Message))
		}
		problems = append(problems, c.health(ctx, live)...)
	}
	return drift, notReady, problems, nil
}

// health returns the problems of one live object of the release and, for a
// workload that is not healthy, of its pods, read from the pod reader (an
// informer cache). A healthy object costs a kstatus computation and no
// read: an idle release lists no pods.
func (c *Client) health(ctx context.Context, live *unstructured.Unstructured) []health.Problem {
	p, unhealthy := health.Object(live)
	if !unhealthy {
		return nil
	}
	if c.pods == nil || !health.IsWorkload(live) {
		return []health.Problem{p}
	}
	sel, err := health.PodSelector(live)
	if err != nil {
		return []health.Problem{p}
	}
	var pods corev1.PodList
	if err := c.pods.List(ctx, &pods, client.InNamespace(live.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		c.log("listing the pods of %s %s/%s: %v", live.GetKind(), live.GetNamespace(), live.GetName(), err)
		return []health.Problem{p}
	}
	var out []health.Problem
	for i := range pods.Items {
		if pp, bad := health.Pod(&pods.Items[i]); bad {
			out = append(out, pp)
		}
	}
	// The pods say why a workload is not ready; its own problem adds
	// something only when it is more than "not ready" (a progress deadline).
	if len(out) == 0 || p.Reason != health.ReasonNotReady {
		out = append(out, p)
	}
	return out
}

// get reads an object through the reader when there is one, falling back to
// the API server when the reader does not have it.
func (c *Client) get(ctx context.Context, ri dynamic.ResourceInterface, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if c.reader != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := c.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
		if err == nil {
			return u, nil
		}
		if !apierrors.IsNotFound(err) {
			c.log("reading %s %s/%s from the cache: %v", gvk.Kind, namespace, name, err)
		}
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// ignoredPaths never count as drift: they are the server's or write-only.
var ignoredPaths = map[string]bool{
	".status":     true,
	".stringData": true, // folded into .data by the API server
	".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration": true,
}

// firstDifference returns the first path (in key order) where desired holds
// a value that live does not. Fields only in live (defaults, other managers)
// are not drift, nor are empty desired values the server fills in.
func firstDifference(desired, live any, path string) string {
	if ignoredPaths[path] {
		return ""
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			if len(d) == 0 {
				return ""
			}
			return path
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p := firstDifference(d[k], l[k], path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		l, ok := live.([]any)
		if !ok {
			if len(d) == 0 {
				return ""
			}
			return path
		}
		if len(d) != len(l) {
			return path
		}
		for i := range d {
			if p := firstDifference(d[i], l[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	case nil:
		return ""
	case string:
		if d == "" {
			return ""
		}
		if scalarEqual(d, live) {
			return ""
		}
		return path
	default:
		if scalarEqual(d, live) {
			return ""
		}
		return path
	}
}

// scalarEqual compares leaves the way the API server may have rewritten
// them: numbers of any Go type, quantities in any notation ("0.5" = "500m").
func scalarEqual(desired, live any) bool {
	if reflect.DeepEqual(desired, live) {
		return true
	}
	dn, dok := number(desired)
	ln, lok := number(live)
	if dok && lok {
		return dn == ln
	}
	ds, dok := desired.(string)
	ls, lok := live.(string)
	if dok && lok {
		dq, err1 := resource.ParseQuantity(ds)
		lq, err2 := resource.ParseQuantity(ls)
		return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
	}
	// An int in the chart that the API stores as a string, or back.
	if dok || lok {
		return strings.TrimSpace(fmt.Sprint(desired)) == strings.TrimSpace(fmt.Sprint(live))
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}
