// Package managedcache is chartpilot's own implementation of the one
// package of pkg.package-operator.run/boxcutter that operator-controller's
// standard build (-tags standard) imports. The module proxy serves no
// version of boxcutter, so the tools module replaces it with this one;
// operator-controller's experimental build (its BoxcutterRuntime) needs the
// rest of boxcutter and cannot be built here.
//
// The standard build uses a TrackingCache for drift detection: after the
// Helm applier installs an extension it asks the cache to watch the kinds
// of the objects it installed, and the cache tells operator-controller's
// controller when one of them changes or is deleted, so that it puts the
// object back. Only metadata is cached: the owner references are what the
// controller maps an event to its ClusterExtension by.
package managedcache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// TrackingCache watches the kinds its users ask for, for as long as at
// least one user needs each, and hands every event to its sources.
type TrackingCache interface {
	// Reader reads through the cache.
	client.Reader
	// Start runs the cache until ctx ends (a manager.Runnable).
	Start(ctx context.Context) error
	// Source is a controller's source of the events of every watched kind.
	Source(h handler.EventHandler, preds ...predicate.Predicate) source.Source
	// Watch makes the kinds user needs exactly gvks.
	Watch(ctx context.Context, user client.Object, gvks sets.Set[schema.GroupVersionKind]) error
	// Free releases every kind user needed.
	Free(ctx context.Context, user client.Object) error
}

// NewTrackingCache is a TrackingCache on cfg's cluster.
func NewTrackingCache(log logr.Logger, cfg *rest.Config, opts cache.Options) (TrackingCache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating the tracking cache: %w", err)
	}
	return &tracker{log: log, cache: c, Reader: c, users: map[types.UID]sets.Set[schema.GroupVersionKind]{},
		watched: map[schema.GroupVersionKind]bool{}}, nil
}

// sink is where a started source sends events.
type sink struct {
	h     handler.EventHandler
	preds []predicate.Predicate
	q     workqueue.TypedRateLimitingInterface[reconcile.Request]
}

type tracker struct {
	log   logr.Logger
	cache cache.Cache
	// Reader is the cache's own.
	client.Reader

	mu sync.Mutex
	// run is Start's context, which events are handled in.
	run     context.Context
	sinks   []sink
	users   map[types.UID]sets.Set[schema.GroupVersionKind]
	watched map[schema.GroupVersionKind]bool
}

func (t *tracker) Start(ctx context.Context) error {
	t.mu.Lock()
	t.run = ctx
	t.mu.Unlock()
	return t.cache.Start(ctx)
}

func (t *tracker) Source(h handler.EventHandler, preds ...predicate.Predicate) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.sinks = append(t.sinks, sink{h: h, preds: preds, q: q})
		return nil
	})
}

func (t *tracker) Watch(ctx context.Context, user client.Object, gvks sets.Set[schema.GroupVersionKind]) error {
	t.mu.Lock()
	t.users[user.GetUID()] = gvks.Clone()
	t.mu.Unlock()
	var errs []error
	for gvk := range gvks {
		if err := t.watch(ctx, gvk); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, t.release(ctx))...)
}

func (t *tracker) Free(ctx context.Context, user client.Object) error {
	t.mu.Lock()
	delete(t.users, user.GetUID())
	t.mu.Unlock()
	return t.release(ctx)
}

// watch starts an informer for gvk's metadata, unless one runs.
func (t *tracker) watch(ctx context.Context, gvk schema.GroupVersionKind) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watched[gvk] {
		return nil
	}
	inf, err := t.cache.GetInformer(ctx, metadataOf(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { t.emit(func(ctx context.Context, s sink) { t.create(ctx, s, o) }) },
		UpdateFunc: func(old, o any) { t.emit(func(ctx context.Context, s sink) { t.update(ctx, s, old, o) }) },
		DeleteFunc: func(o any) { t.emit(func(ctx context.Context, s sink) { t.delete(ctx, s, o) }) },
	}); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	t.watched[gvk] = true
	return nil
}

// release stops the informers no user needs any more.
func (t *tracker) release(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	needed := sets.New[schema.GroupVersionKind]()
	for _, gvks := range t.users {
		needed = needed.Union(gvks)
	}
	var errs []error
	for gvk := range t.watched {
		if needed.Has(gvk) {
			continue
		}
		if err := t.cache.RemoveInformer(ctx, metadataOf(gvk)); err != nil {
			errs = append(errs, fmt.Errorf("unwatching %s: %w", gvk, err))
			continue
		}
		delete(t.watched, gvk)
	}
	return errors.Join(errs...)
}

// emit hands an event to every sink, in Start's context (not the one of
// the Watch that began the informer, which a reconcile ends), outside the
// lock: handlers may block on their queue.
func (t *tracker) emit(fn func(context.Context, sink)) {
	t.mu.Lock()
	ctx, sinks := t.run, append([]sink(nil), t.sinks...)
	t.mu.Unlock()
	if ctx == nil {
		ctx = context.Background() // the cache runs only once started
	}
	for _, s := range sinks {
		fn(ctx, s)
	}
}

func (t *tracker) create(ctx context.Context, s sink, o any) {
	obj, ok := o.(client.Object)
	if !ok {
		return
	}
	e := event.CreateEvent{Object: obj}
	for _, p := range s.preds {
		if !p.Create(e) {
			return
		}
	}
	s.h.Create(ctx, e, s.q)
}

func (t *tracker) update(ctx context.Context, s sink, old, o any) {
	oldObj, ok1 := old.(client.Object)
	obj, ok2 := o.(client.Object)
	if !ok1 || !ok2 {
		return
	}
	e := event.UpdateEvent{ObjectOld: oldObj, ObjectNew: obj}
	for _, p := range s.preds {
		if !p.Update(e) {
			return
		}
	}
	s.h.Update(ctx, e, s.q)
}

func (t *tracker) delete(ctx context.Context, s sink, o any) {
	e := event.DeleteEvent{}
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o, e.DeleteStateUnknown = tomb.Obj, true
	}
	obj, ok := o.(client.Object)
	if !ok {
		t.log.V(1).Info("ignoring a deletion of an unknown object", "type", fmt.Sprintf("%T", o))
		return
	}
	e.Object = obj
	for _, p := range s.preds {
		if !p.Delete(e) {
			return
		}
	}
	s.h.Delete(ctx, e, s.q)
}

// metadataOf is the metadata-only object of gvk the cache watches.
func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}
