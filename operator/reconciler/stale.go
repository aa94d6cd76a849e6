package reconciler

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// overwritten remembers, per CR, the versions this reconciler wrote over
// (a finalizer added, a status written) until the cache shows a later one.
// A reconcile that reads one of them from the cache would act on what it
// already replaced: the Update of a finalizer it added, or a status write,
// conflicts, and a status computed from it is rebased at the cost of a GET
// and another write. The events of the objects an install creates queue
// such a reconcile right after the install, before the cache has its writes.
type overwritten struct {
	mu   sync.Mutex
	byCR map[types.NamespacedName]map[string]bool
}

// wrote records that the CR at resourceVersion was written over.
func (o *overwritten) wrote(key types.NamespacedName, resourceVersion string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byCR == nil {
		o.byCR = map[types.NamespacedName]map[string]bool{}
	}
	if o.byCR[key] == nil {
		o.byCR[key] = map[string]bool{}
	}
	o.byCR[key][resourceVersion] = true
}

// stale reports whether the cache's copy of a CR, at resourceVersion, is
// one this reconciler wrote over. Any other version ends the watch for the
// CR's earlier versions: resourceVersions are opaque, but a cache never
// goes back.
func (o *overwritten) stale(key types.NamespacedName, resourceVersion string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byCR[key][resourceVersion] {
		return true
	}
	delete(o.byCR, key)
	return false
}

func (o *overwritten) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byCR, key)
}
