package backup

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/chartpilot/chartpilot/operator/backup/api"
)

// Served tells whether the API server serves the backup and restore kinds
// of a watched kind: a project scaffolded before they existed has no CRDs
// for them, and its operator runs without.
func Served(dc discovery.DiscoveryInterface, watched schema.GroupVersionKind) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(watched.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", watched.GroupVersion(), err)
	}
	found := map[string]bool{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") { // not a subresource
			found[r.Kind] = true
		}
	}
	return found[api.BackupKind(watched).Kind] && found[api.RestoreKind(watched).Kind], nil
}

// Objects are the backup and restore kinds of a watched kind, as objects
// for the manager's cache options.
func Objects(watched schema.GroupVersionKind) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, gvk := range []schema.GroupVersionKind{api.BackupKind(watched), api.RestoreKind(watched)} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out
}

// Add registers the backup and restore controllers of opts.Watched.
func Add(mgr manager.Manager, opts Options, skipNameValidation bool) error {
	opts.defaults()
	objs := Objects(opts.Watched)
	for i, r := range []reconcile.Reconciler{NewBackupReconciler(opts), NewRestoreReconciler(opts)} {
		gvk := objs[i].GroupVersionKind()
		name := strings.ToLower(gvk.Kind) + "." + gvk.Group + "." + gvk.Version
		_, err := builder.ControllerManagedBy(mgr).
			Named(name).
			For(objs[i], builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).
			Build(r)
		if err != nil {
			return fmt.Errorf("creating the controller for %s: %w", gvk, err)
		}
	}
	return nil
}
