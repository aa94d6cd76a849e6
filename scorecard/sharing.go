package scorecard

import (
	"fmt"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/operator/values"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// probeNamespace is the namespace the releases are rendered in to find
// what they put elsewhere.
const probeNamespace = "scorecard-probe"

// sharedObjects says why two cluster tests side by side could collide,
// empty when they cannot. Each test has a namespace of its own, but the
// release of an alm-example may render an object that is cluster-scoped
// or in a fixed namespace: the same custom resource's release in a second
// test would render it too, and Helm refuses an object another release
// owns. What it cannot tell (a chart that does not render, a kind neither
// the cluster nor the bundle defines) counts as a collision.
func (r *run) sharedObjects() string {
	crs, err := r.bundle.CustomResources()
	if err != nil {
		return fmt.Sprintf("cannot read the alm-examples: %v", err)
	}
	ws, err := watches.Load(filepath.Join(r.opts.ProjectDir, "watches.yaml"), watches.Options{})
	if err != nil {
		return fmt.Sprintf("cannot load the project's watches: %v", err)
	}
	scope, err := r.scopes()
	if err != nil {
		return err.Error()
	}
	for _, cr := range releaseCRs(crs) {
		if why := releaseOutside(cr, ws, scope); why != "" {
			return fmt.Sprintf("the release of %s %s %s", cr.GetKind(), cr.GetName(), why)
		}
	}
	return ""
}

// releaseOutside renders cr's release as the operator watching it would
// and names the first object it puts outside the release's namespace.
func releaseOutside(cr *unstructured.Unstructured, ws []watches.Watch, scope func(schema.GroupVersionKind) (namespaced, known bool)) string {
	for _, w := range ws {
		if w.GroupVersionKind() != cr.GroupVersionKind() || w.LoadedChart == nil {
			continue
		}
		vals, err := values.Compose(w.LoadedChart, cr.Object["spec"], w.OverrideValues)
		if err != nil {
			return fmt.Sprintf("cannot be composed: %v", err)
		}
		ch := &chart.Chart{Helm: w.LoadedChart}
		rendered, err := ch.Render(chart.RenderOptions{ReleaseName: cr.GetName(), Namespace: probeNamespace, Values: vals})
		if err != nil {
			return fmt.Sprintf("does not render: %v", err)
		}
		for _, m := range append(rendered.CRDs, rendered.Objects...) {
			if why := outside(m.Object, scope); why != "" {
				return "renders " + why
			}
		}
	}
	return ""
}

// outside says why obj is not in the release's namespace alone.
func outside(obj *unstructured.Unstructured, scope func(schema.GroupVersionKind) (namespaced, known bool)) string {
	gvk := obj.GroupVersionKind()
	id := fmt.Sprintf("%s %s", gvk.Kind, obj.GetName())
	namespaced, known := scope(gvk)
	switch {
	case !known:
		return fmt.Sprintf("%s, of a kind neither the cluster nor the bundle serves: it may be cluster-scoped", id)
	case !namespaced:
		return fmt.Sprintf("%s, which is cluster-scoped", id)
	case obj.GetNamespace() != "" && obj.GetNamespace() != probeNamespace:
		return fmt.Sprintf("%s in namespace %s, not the release's", id, obj.GetNamespace())
	}
	return ""
}

// scopes tells whether a kind is namespaced: from the cluster's discovery,
// else from the bundle's CRDs (not installed yet).
func (r *run) scopes() (func(schema.GroupVersionKind) (namespaced, known bool), error) {
	dc, err := discovery.NewDiscoveryClientForConfig(r.opts.Config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	crds, err := r.bundle.v1CRDs()
	if err != nil {
		return nil, err
	}
	bundle := map[schema.GroupKind]bool{}
	for _, crd := range crds {
		bundle[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	}
	return func(gvk schema.GroupVersionKind) (bool, bool) {
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return m.Scope.Name() == meta.RESTScopeNameNamespace, true
		}
		namespaced, ok := bundle[gvk.GroupKind()]
		return namespaced, ok
	}, nil
}
