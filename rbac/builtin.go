package rbac

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinResource is one kind a Kubernetes API server serves out of the box.
type builtinResource struct {
	Group, Version, Kind string
	// Resource is the plural resource name RBAC rules use.
	Resource string
	// Namespaced is false for cluster-scoped kinds.
	Namespaced bool
}

// builtinIndex indexes builtinResources by group/version/kind and group/kind.
type builtinIndex struct {
	byGVK map[schema.GroupVersionKind]builtinResource
	byGK  map[schema.GroupKind]builtinResource
}

func newBuiltinIndex(list []builtinResource) builtinIndex {
	idx := builtinIndex{byGVK: map[schema.GroupVersionKind]builtinResource{}, byGK: map[schema.GroupKind]builtinResource{}}
	for _, r := range list {
		idx.byGVK[schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}] = r
		gk := schema.GroupKind{Group: r.Group, Kind: r.Kind}
		if _, ok := idx.byGK[gk]; !ok {
			idx.byGK[gk] = r
		}
	}
	return idx
}

// lookup finds gvk, or the same group and kind in another version (RBAC
// rules do not name versions, and resource names do not change between them).
func (idx builtinIndex) lookup(gvk schema.GroupVersionKind) (builtinResource, bool) {
	if r, ok := idx.byGVK[gvk]; ok {
		return r, true
	}
	r, ok := idx.byGK[gvk.GroupKind()]
	return r, ok
}

var builtins = newBuiltinIndex(builtinResources)
