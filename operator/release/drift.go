package release

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
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

// desiredObject is one object of a revision's manifest: what names it, and
// the version of the live object last found as desired.
type desiredObject struct {
	gvk             schema.GroupVersionKind
	namespace, name string
	resource        dynamic.ResourceInterface
	// verified is the live object last found as desired.
	verified objectVersion
}

// id names the object for people: "Kind namespace/name".
func (o *desiredObject) id() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

// unchanged says, from the cached view (or object) live, that the object
// still is as desired: it is the version last verified, or it kept the
// verified generation (or, for kinds without one, content) and metadata:
// only its status changed since.
func (o *desiredObject) unchanged(live *unstructured.Unstructured) bool {
	v := o.verified
	switch {
	case v.resourceVersion == "":
		return false
	case live.GetResourceVersion() == v.resourceVersion:
		return true
	case v.generation > 0:
		return live.GetGeneration() == v.generation && metadataOf(live) == v.metadata
	}
	return v.content != "" && Content(live) == v.content && metadataOf(live) == v.metadata
}

func (o *desiredObject) verify(live metav1.Object) { o.verified = versionOf(live) }

// builtManifest is what is kept of a revision's manifest while the revision
// is the release's deployed one: the objects' names and metadata, not the
// objects, which are parsed again when one has changed.
type builtManifest struct {
	rel     *helmrelease.Release
	objects []desiredObject
}

// desired returns the objects of rel's manifest. Revisions read through the
// record index are the same value from one reconcile to the next, so what
// their objects were last verified at is kept with them.
func (c *Client) desired(cfg *action.Configuration, rel *helmrelease.Release) ([]desiredObject, error) {
	key := types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}
	c.builtMu.Lock()
	b, ok := c.built[key]
	c.builtMu.Unlock()
	if ok && b.rel == rel {
		return b.objects, nil
	}
	objects, _, err := c.parse(cfg, rel)
	if err != nil {
		return nil, err
	}
	c.builtMu.Lock()
	if c.built == nil {
		c.built = map[types.NamespacedName]builtManifest{}
	}
	c.built[key] = builtManifest{rel: rel, objects: objects}
	c.builtMu.Unlock()
	if c.records != nil {
		// Kept from now on in its parsed form: the manifest, often the
		// largest part of a release, is read again from the record in
		// the rare reconcile that needs it whole. Without the record
		// index, rel is read afresh each time.
		rel.Manifest = ""
	}
	return objects, nil
}

// parse reads rel's manifest into its objects, in order; from its record
// when rel no longer holds it (see desired).
func (c *Client) parse(cfg *action.Configuration, rel *helmrelease.Release) ([]desiredObject, []*unstructured.Unstructured, error) {
	manifest := rel.Manifest
	if manifest == "" {
		whole, err := c.record(rel.Namespace, rel.Name, rel.Version)
		if err != nil {
			return nil, nil, fmt.Errorf("reading revision %d of %s/%s: %w", rel.Version, rel.Namespace, rel.Name, err)
		}
		manifest = whole.Manifest
	}
	resources, err := cfg.KubeClient.Build(bytes.NewBufferString(manifest), false)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the manifest of revision %d: %w", rel.Version, err)
	}
	objects := make([]desiredObject, 0, len(resources))
	full := make([]*unstructured.Unstructured, 0, len(resources))
	for _, info := range resources {
		obj, err := toUnstructured(info.Object)
		if err != nil {
			return nil, nil, err
		}
		markOwned(obj, rel)
		d := desiredObject{
			gvk:       info.Mapping.GroupVersionKind,
			namespace: info.Namespace,
			name:      info.Name,
		}
		if !info.Namespaced() {
			d.namespace = ""
		}
		d.resource = c.resource(info.Mapping.Resource, d.namespace)
		if v, ok := c.created.take(rel, d.gvk, d.namespace, d.name); ok {
			d.verified = v
		}
		objects = append(objects, d)
		full = append(full, obj)
	}
	return objects, full, nil
}

// resource returns the client of gvr in namespace ("" for cluster-scoped
// kinds): one for all the objects of releases there, which keep it as long
// as their revision is deployed.
func (c *Client) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	key := resourceKey{gvr, namespace}
	if ri, ok := c.resources.Load(key); ok {
		return ri.(dynamic.ResourceInterface)
	}
	var ri dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if namespace != "" {
		ri = c.dynamic.Resource(gvr).Namespace(namespace)
	}
	got, _ := c.resources.LoadOrStore(key, ri)
	return got.(dynamic.ResourceInterface)
}

type resourceKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// objectVersion names a version of an object, and sums up its metadata and,
// for kinds without a generation, its content.
type objectVersion struct {
	resourceVersion string
	generation      int64
	metadata        uint64
	content         string
}

func versionOf(obj metav1.Object) objectVersion {
	v := objectVersion{resourceVersion: obj.GetResourceVersion(), generation: obj.GetGeneration(), metadata: metadataOf(obj)}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		v.content = Content(u)
	}
	return v
}

// createdLog holds, by release, the version of each object Helm created,
// until the release's manifest is next parsed: an object is created as the
// manifest says, so that version needs no reading and comparing (unlike
// one Helm patched: a three-way merge keeps fields others changed). Helm
// labels every object it creates with its release.
type createdLog struct {
	mu       sync.Mutex
	releases map[types.NamespacedName]map[objectKey]objectVersion
}

type objectKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (l *createdLog) add(resources kube.ResourceList) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, info := range resources {
		m, err := meta.Accessor(info.Object)
		if err != nil || m.GetResourceVersion() == "" || info.Mapping == nil {
			continue
		}
		ann := m.GetAnnotations()
		rel := types.NamespacedName{Namespace: ann[helmReleaseNamespace], Name: ann[helmReleaseName]}
		if rel.Name == "" {
			continue
		}
		if l.releases == nil {
			l.releases = map[types.NamespacedName]map[objectKey]objectVersion{}
		}
		if l.releases[rel] == nil {
			l.releases[rel] = map[objectKey]objectVersion{}
		}
		ns := info.Namespace
		if info.Mapping.Scope != nil && info.Mapping.Scope.Name() == meta.RESTScopeNameRoot {
			ns = ""
		}
		l.releases[rel][objectKey{info.Mapping.GroupVersionKind, ns, info.Name}] = versionOf(m)
	}
}

// take returns and forgets the version of an object rel created.
func (l *createdLog) take(rel *helmrelease.Release, gvk schema.GroupVersionKind, namespace, name string) (objectVersion, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := types.NamespacedName{Namespace: rel.Namespace, Name: rel.Name}
	objects := l.releases[key]
	v, ok := objects[objectKey{gvk, namespace, name}]
	delete(objects, objectKey{gvk, namespace, name})
	if len(objects) == 0 {
		delete(l.releases, key)
	}
	return v, ok
}

func (l *createdLog) forget(rel types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.releases, rel)
}

// The annotations and the label Helm puts on the objects of a release.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
	managedByLabel       = "app.kubernetes.io/managed-by"
	managedByHelm        = "Helm"
)

// markOwned puts on obj what Helm puts on each object it applies, and what
// Helm 4 checks before it deletes one at uninstall: an object the repair
// creates again without it would be left behind.
func markOwned(obj *unstructured.Unstructured, rel *helmrelease.Release) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedByHelm
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[helmReleaseName], ann[helmReleaseNamespace] = rel.Name, rel.Namespace
	obj.SetAnnotations(ann)
}

// kinds lists the kinds of objects, in order, once each.
func kinds(objects []desiredObject) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for _, o := range objects {
		if !slices.Contains(out, o.gvk) {
			out = append(out, o.gvk)
		}
	}
	return out
}

// compare reads every object of the deployed revision from the cluster and
// reports which were deleted or changed, which are not ready, and the
// problems of those not healthy. An object whose cached view shows it
// unchanged since it was last found as desired costs no request and no
// parse; one that changed is read from the API server and compared with the
// manifest, parsed again.
func (c *Client) compare(ctx context.Context, cfg *action.Configuration, rel *helmrelease.Release) (comparison, error) {
	objects, err := c.desired(cfg, rel)
	if err != nil {
		return comparison{}, err
	}
	out := comparison{kinds: kinds(objects)}
	var full []*unstructured.Unstructured
	for i := range objects {
		o := &objects[i]
		live, err := c.get(ctx, o.resource, o.gvk, o.namespace, o.name)
		if err == nil && live.GetDeletionTimestamp() == nil && o.unchanged(live) {
			c.assessHealth(ctx, &out, o, live)
			continue
		}
		if err == nil && isView(live) && live.GetDeletionTimestamp() == nil {
			live, err = o.resource.Get(ctx, o.name, metav1.GetOptions{})
		}
		if full == nil && (err == nil || apierrors.IsNotFound(err)) {
			var perr error
			if _, full, perr = c.parse(cfg, rel); perr != nil {
				return comparison{}, perr
			}
			if len(full) != len(objects) {
				return comparison{}, fmt.Errorf("the manifest of revision %d read as %d objects, then %d", rel.Version, len(objects), len(full))
			}
		}
		d := Drift{Object: o.id(), resource: o.resource}
		if full != nil {
			d.desired = full[i]
		}
		switch {
		case apierrors.IsNotFound(err):
			d.Deleted = true
			out.drift = append(out.drift, d)
			continue
		case err != nil:
			return comparison{}, fmt.Errorf("reading %s: %w", o.id(), err)
		}
		d.live = live
		if live.GetDeletionTimestamp() != nil {
			d.Deleted = true
			out.drift = append(out.drift, d)
			continue
		}
		if d.Path = firstDifference(d.desired.Object, live.Object, ""); d.Path != "" {
			out.drift = append(out.drift, d)
			continue
		}
		o.verify(live)
		c.assessHealth(ctx, &out, o, live)
	}
	return out, nil
}

// comparison is what compare found of a release's objects in the cluster.
type comparison struct {
	drift    []Drift
	notReady []string
	problems []health.Problem
	kinds    []schema.GroupVersionKind
}

// assessHealth adds the readiness and problems of an object as desired,
// from its view or the object itself, to out.
func (c *Client) assessHealth(ctx context.Context, out *comparison, o *desiredObject, live *unstructured.Unstructured) {
	if st, msg := Readiness(live); st != status.CurrentStatus {
		out.notReady = append(out.notReady, fmt.Sprintf("%s: %s %s", o.id(), st, msg))
	}
	out.problems = append(out.problems, c.health(ctx, live)...)
}

// health returns the problems of one live object of the release (or of its
// view) and, for a workload that is not healthy, of its pods, read from the
// pod reader (an informer cache of pod views). A healthy object costs no
// read: an idle release lists no pods.
func (c *Client) health(ctx context.Context, live *unstructured.Unstructured) []health.Problem {
	p, unhealthy := Problem(live)
	if !unhealthy {
		return nil
	}
	if c.pods == nil || !health.IsWorkload(live) {
		return []health.Problem{p}
	}
	sel, err := podSelector(live)
	if err != nil {
		return []health.Problem{p}
	}
	pods, err := podsMatching(ctx, c.pods, live.GetNamespace(), sel)
	if err != nil {
		c.log("listing the pods of %s %s/%s: %v", live.GetKind(), live.GetNamespace(), live.GetName(), err)
		return []health.Problem{p}
	}
	var out []health.Problem
	for i := range pods {
		if pp, bad := Problem(&pods[i]); bad {
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
		keys := slices.Sorted(maps.Keys(d))
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
		// false and 0 the API server drops from a built-in kind's field
		// marked omitempty (a PriorityClass's globalDefault: false).
		if live == nil && (d == false || isZeroNumber(d)) {
			return ""
		}
		if scalarEqual(d, live) {
			return ""
		}
		return path
	}
}

func isZeroNumber(v any) bool {
	n, ok := number(v)
	return ok && n == 0
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
