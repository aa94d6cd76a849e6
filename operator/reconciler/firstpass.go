package reconciler

import (
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The first pass defers, after a start or a takeover, the first reconcile of
// each CR whose status says its release is settled as the CR asks now: the
// new process has verified none of their objects, and each first check
// reads them all from the API server, so the first pass over 1000 CRs takes
// tens of seconds. The controller's queue is FIFO (the plain rate-limited
// one, see controllerConfig in package operator), and a CR changed meanwhile
// waited behind that pass; deferring the checks of settled CRs, which costs
// no request, lets the changed ones through first. The deferred checks
// come firstPassDelay later, spread over as long again.
//
// Whether the process has seen a CR is crState.seen.

// firstPassDelay is how long the first check of a settled CR waits at least.
const firstPassDelay = 5 * time.Second

// first reports whether this is the process's first reconcile of the CR.
func (s *crState) first() bool {
	first := !s.seen
	s.seen = true
	return first
}

// firstPassWait is when a deferred first check comes.
func firstPassWait() time.Duration {
	return firstPassDelay + rand.N(firstPassDelay)
}

// settled reports whether a status says the release is deployed, ready and
// healthy from the chart and values of digest, as of the CR's generation,
// with nothing failed or drifted: what a reconcile would find unless the
// cluster changed while no process watched it, which the deferred check
// finds.
func settled(st Status, generation int64, digest string) bool {
	if st.ObservedGeneration != generation || st.DeployedRelease == nil || st.DeployedRelease.Digest != digest || st.Health != nil {
		return false
	}
	is := func(typ string, want metav1.ConditionStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, typ)
		return c != nil && c.Status == want && c.ObservedGeneration == generation
	}
	return is(TypeDeployed, metav1.ConditionTrue) && is(TypeReady, metav1.ConditionTrue) &&
		is(TypeReleaseFailed, metav1.ConditionFalse) && is(TypeIrreconcilable, metav1.ConditionFalse) &&
		!is(TypeDrifted, metav1.ConditionTrue)
}
