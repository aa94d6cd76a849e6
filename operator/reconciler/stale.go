package reconciler

// crState.overwritten remembers the CR's versions this reconciler wrote over
// (a finalizer added, a status written) until the cache shows a later one.
// A reconcile that reads one of them from the cache would act on what it
// already replaced: the Update of a finalizer it added, or a status write,
// conflicts, and a status computed from it is rebased at the cost of a GET
// and another write. The events of the objects an install creates queue
// such a reconcile right after the install, before the cache has its writes.

// wrote records that a write of the CR at version from made version to.
// A write that changed nothing (the API server pruned all it changed, such
// as a condition's observedGeneration a CRD's status schema lacks) keeps
// the version: the cache will show no later one, so from is not stale.
func (s *crState) wrote(from, to string) {
	if from == to {
		return
	}
	if s.overwritten == nil {
		s.overwritten = map[string]bool{}
	}
	s.overwritten[from] = true
}

// stale reports whether the cache's copy of a CR, at resourceVersion, is
// one this reconciler wrote over. Any other version ends the watch for the
// CR's earlier versions: resourceVersions are opaque, but a cache never
// goes back.
func (s *crState) stale(resourceVersion string) bool {
	if s.overwritten[resourceVersion] {
		return true
	}
	s.overwritten = nil
	return false
}
