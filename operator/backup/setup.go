package backup

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
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

// SchedulesServed tells whether the API server serves the schedule kind of
// a watched kind: projects scaffolded before schedules have none.
func SchedulesServed(dc discovery.DiscoveryInterface, watched schema.GroupVersionKind) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(watched.GroupVersion().String())
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", watched.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == api.ScheduleKind(watched).Kind && !strings.Contains(r.Name, "/") {
			return true, nil
		}
	}
	return false, nil
}

// ScheduleObject is the schedule kind of a watched kind, as an object for
// the manager's cache options.
func ScheduleObject(watched schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(api.ScheduleKind(watched))
	return u
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
	if opts.Schedules {
		return addSchedules(mgr, opts, objs[0], skipNameValidation)
	}
	return nil
}

// addSchedules registers the schedule controller: it wakes at its ticks,
// when its spec or annotations change, and when one of its Backups does.
func addSchedules(mgr manager.Manager, opts Options, backupObj *unstructured.Unstructured, skipNameValidation bool) error {
	obj := ScheduleObject(opts.Watched)
	gvk := obj.GroupVersionKind()
	_, err := builder.ControllerManagedBy(mgr).
		Named(strings.ToLower(gvk.Kind)+"."+gvk.Group+"."+gvk.Version).
		For(obj, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(backupObj, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, b client.Object) []reconcile.Request {
			name := b.GetLabels()[api.ScheduleLabel]
			if name == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.GetNamespace(), Name: name}}}
		})).
		WithOptions(controller.Options{SkipNameValidation: &skipNameValidation}).
		Build(NewScheduleReconciler(opts))
	if err != nil {
		return fmt.Errorf("creating the controller for %s: %w", gvk, err)
	}
	return nil
}
