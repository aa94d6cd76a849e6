package extension

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/olm"
)

// UninstallOptions configure Uninstall.
type UninstallOptions struct {
	// Name is the ClusterExtension's name. Required.
	Name string
	// Config reaches the cluster, to find what is left of the extension
	// in every resource the API server serves. Required.
	Config *rest.Config
	// Timeout bounds each wait (the extension's objects to be collected,
	// the namespace to terminate); default 2 minutes.
	Timeout time.Duration
	// Out receives progress lines; nil discards them.
	Out io.Writer
}

// UninstallResult reports what Uninstall removed.
type UninstallResult struct {
	Objects []olm.ObjectResult `json:"objects"`
	// Collected counts the objects of the bundle the garbage collector
	// removed after the ClusterExtension went.
	Collected int `json:"collected"`
	// Notes say what was left alone and why.
	Notes []string `json:"notes,omitempty"`
}

// ErrLeftovers means objects of the extension were still there after the
// timeout.
var ErrLeftovers = errors.New("objects of the extension are left")

// Uninstall deletes the ClusterExtension and waits until every object
// operator-controller installed for it (labelled with its owner, owned by
// it, so collected by the garbage collector, Helm's release records too)
// is gone; then it deletes what Install created for it: the installer's
// RoleBinding, Role, ClusterRoleBinding, ClusterRole and ServiceAccount,
// its ClusterCatalog (unless another ClusterExtension selects it) and its
// namespace (only when Install created it), waiting for the namespace to
// terminate. The installer's RBAC stays until the bundle's objects are
// gone: operator-controller acts as the installer until then.
func Uninstall(ctx context.Context, c client.Client, opts UninstallOptions) (*UninstallResult, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Config == nil {
		return nil, errors.New("uninstall: no cluster configuration")
	}
	ext, err := getExtension(ctx, c, opts.Name)
	if err != nil {
		return nil, err
	}
	res := &UninstallResult{}
	created, err := createdFor(ctx, c, opts.Name)
	if err != nil {
		return nil, err
	}
	if ext == nil && len(created) == 0 {
		return nil, fmt.Errorf("uninstall: %w %s, and nothing chartpilot created for it", ErrNotInstalled, opts.Name)
	}
	began := time.Now()
	installed, err := newInstalledObjects(opts.Config, opts.Name)
	if err != nil {
		return nil, err
	}
	left, err := installed.list(ctx)
	if err != nil {
		return nil, err
	}
	res.Collected = len(left)
	if ext != nil {
		if err := res.deleteAndWait(ctx, c, newUnstructured(ExtensionKind), opts.Name, "", opts.Timeout); err != nil {
			return res, err
		}
		fmt.Fprintf(opts.Out, "ClusterExtension %s deleted in %s\n", opts.Name, time.Since(began).Round(10*time.Millisecond))
	}
	if err := installed.waitGone(ctx, opts.Timeout); err != nil {
		return res, err
	}
	fmt.Fprintf(opts.Out, "the %d object(s) installed for it collected in %s\n", res.Collected, time.Since(began).Round(10*time.Millisecond))
	for _, u := range created {
		step := time.Now()
		if u.GetKind() == CatalogKind {
			users, err := catalogUsers(ctx, c, u.GetName(), opts.Name)
			if err != nil {
				return res, err
			}
			if len(users) > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("ClusterCatalog %s kept: ClusterExtension %s selects it", u.GetName(), strings.Join(users, ", ")))
				continue
			}
		}
		if err := res.deleteAndWait(ctx, c, u, u.GetName(), u.GetNamespace(), opts.Timeout); err != nil {
			return res, err
		}
		fmt.Fprintf(opts.Out, "%s %s deleted in %s\n", u.GetKind(), objectName(u), time.Since(step).Round(10*time.Millisecond))
	}
	return res, nil
}

// createdKinds are the kinds Install creates, in the order Uninstall
// deletes them: the bindings before the roles, the namespace last.
var createdKinds = []schema.GroupVersionKind{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Version: "v1", Kind: "ServiceAccount"},
	GroupVersion.WithKind(CatalogKind),
	{Version: "v1", Kind: "Namespace"},
}

// createdFor lists what Install created for the extension, by its labels.
func createdFor(ctx context.Context, c client.Client, name string) ([]*unstructured.Unstructured, error) {
	sel := client.MatchingLabels{olm.ManagedByLabel: apply.FieldManager, ExtensionLabel: name}
	var out []*unstructured.Unstructured
	for _, gvk := range createdKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, sel); err != nil {
			return nil, fmt.Errorf("listing %ss created for %s: %w", gvk.Kind, name, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// catalogUsers are the other ClusterExtensions that select the catalog by name.
func catalogUsers(ctx context.Context, c client.Client, catalog, except string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GroupVersion.WithKind(ExtensionKind + "List"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing ClusterExtensions: %w", err)
	}
	var out []string
	for i := range list.Items {
		var ext Extension
		if err := fromUnstructured(&list.Items[i], &ext); err != nil {
			return nil, err
		}
		if ext.Name == except {
			continue
		}
		f := ext.Spec.Source.Catalog
		if f == nil || f.Selector == nil {
			out = append(out, ext.Name) // it searches every catalog
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(f.Selector)
		if err == nil && sel.Matches(labels.Set{MetadataNameLabel: catalog}) {
			out = append(out, ext.Name)
		}
	}
	return out, nil
}

// deleteAndWait deletes an object and waits until it is gone.
func (res *UninstallResult) deleteAndWait(ctx context.Context, c client.Client, u *unstructured.Unstructured, name, namespace string, timeout time.Duration) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	obj.SetName(name)
	obj.SetNamespace(namespace)
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstall: deleting %s %s: %w", obj.GetKind(), objectName(obj), err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("uninstall: %s %s still there after %s (finalizers: %v)", obj.GetKind(), objectName(obj), timeout, finalizersOf(ctx, c, obj))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	res.Objects = append(res.Objects, olm.ObjectResult{Kind: obj.GetKind(), Name: name, Namespace: namespace, Action: olm.ActionDeleted})
	return nil
}

func finalizersOf(ctx context.Context, c client.Client, obj *unstructured.Unstructured) []string {
	cur := obj.DeepCopy()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
		return nil
	}
	return cur.GetFinalizers()
}

// releaseOwner is the owner label of operator-controller's release
// records (Secrets in its system namespace).
const releaseOwner = "operator-controller"

// installedObjects finds what operator-controller installed for an
// extension: objects labelled with it as their owner, in every resource
// the API server serves, and its Helm release records.
type installedObjects struct {
	dyn     dynamic.Interface
	queries []query
}

type query struct {
	resources []schema.GroupVersionResource
	selector  string
}

func newInstalledObjects(cfg *rest.Config, name string) (*installedObjects, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{} // listing deprecated APIs is no news
	if cfg.QPS < 50 {
		// One look lists every resource: client-go's 5 a second (or a
		// kubeconfig loader's rate limiter) would take a quarter of a minute.
		cfg.QPS, cfg.Burst, cfg.RateLimiter = 50, 300, nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	resources, err := listableResources(cfg)
	if err != nil {
		return nil, err
	}
	return &installedObjects{dyn: dyn, queries: []query{
		{resources, labels.Set{OwnerKindLabel: ExtensionKind, OwnerNameLabel: name}.String()},
		{[]schema.GroupVersionResource{{Version: "v1", Resource: "secrets"}}, labels.Set{"owner": releaseOwner, "name": name}.String()},
	}}, nil
}

// list lists them as "resource/namespace/name".
func (in *installedObjects) list(ctx context.Context) ([]string, error) {
	return in.listIn(ctx, nil)
}

// listIn lists them in the resources of only, every resource when nil.
func (in *installedObjects) listIn(ctx context.Context, only map[string]bool) ([]string, error) {
	var out []string
	for _, q := range in.queries {
		resources := q.resources
		if only != nil {
			resources = slices.DeleteFunc(slices.Clone(resources), func(r schema.GroupVersionResource) bool { return !only[r.Resource] })
		}
		l, err := Leftovers(ctx, in.dyn, resources, q.selector)
		if err != nil {
			return nil, err
		}
		out = append(out, l...)
	}
	return out, nil
}

// waitGone waits until none is left; the garbage collector removes them
// once the extension, their owner, is gone. It looks again only where it
// found some (nothing new is installed for a deleted extension), then
// everywhere once more.
func (in *installedObjects) waitGone(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var where map[string]bool
	for {
		left, err := in.listIn(ctx, where)
		if err != nil {
			return err
		}
		if len(left) == 0 && where == nil {
			return nil
		}
		if len(left) == 0 {
			where = nil // the last look is everywhere
			continue
		}
		if where == nil {
			where = map[string]bool{}
		}
		for _, l := range left {
			resource, _, _ := strings.Cut(l, "/")
			where[resource] = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("uninstall: %w after %s: %s (the garbage collector of kube-controller-manager removes them once the ClusterExtension is gone)",
				ErrLeftovers, timeout, strings.Join(left, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// listableResources are the resources the API server serves that can be
// listed, in their preferred versions, subresources left out.
func listableResources(cfg *rest.Config) ([]schema.GroupVersionResource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, nil
}

// Leftovers lists, as "resource/namespace/name", the objects of resources
// that carry the label selector.
func Leftovers(ctx context.Context, dyn dynamic.Interface, resources []schema.GroupVersionResource, selector string) ([]string, error) {
	var out []string
	for _, gvr := range resources {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsForbidden(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		for _, item := range list.Items {
			out = append(out, gvr.Resource+"/"+objectName(&item))
		}
	}
	slices.Sort(out)
	return out, nil
}
