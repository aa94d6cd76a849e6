// Package machinery declares the engine of operator-controller's
// experimental BoxcutterRuntime. It is not built here: every engine
// refuses with ErrUnavailable, and chartpilot's cluster never turns the
// BoxcutterRuntime feature gate on. See machinery/types.
package machinery

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"pkg.package-operator.run/boxcutter/machinery/types"
	"pkg.package-operator.run/boxcutter/managedcache"
	"pkg.package-operator.run/boxcutter/validation"
)

// ErrUnavailable is every engine's answer: boxcutter is not in this build.
var ErrUnavailable = errors.New("operator-controller was built without boxcutter (the module proxy serves none): the BoxcutterRuntime feature gate cannot be used")

// Action is what the engine did with an object.
type Action string

// ActionCollision is an object another owner controls.
const ActionCollision Action = "Collision"

// ObjectResult, PhaseResult and RevisionResult report a reconcile.
type (
	ObjectResult interface {
		Action() Action
		Object() client.Object
		ProbeResults() map[string]types.ProbeResult
		String() string
	}
	PhaseResult interface {
		GetValidationError() error
		GetObjects() []ObjectResult
		IsComplete() bool
	}
	RevisionResult interface {
		GetValidationError() error
		GetPhases() []PhaseResult
		InTransition() bool
		IsComplete() bool
		String() string
	}
	RevisionTeardownResult interface{ IsComplete() bool }
)

// Comparator, ObjectEngine and PhaseEngine are the engine's parts.
type (
	Comparator   struct{}
	ObjectEngine struct{}
	PhaseEngine  struct{}
)

// NewComparator is the engine's object comparator.
func NewComparator(discovery.CachedDiscoveryInterface, *runtime.Scheme, string) *Comparator {
	return &Comparator{}
}

// NewObjectEngine is the engine of single objects.
func NewObjectEngine(_ *runtime.Scheme, _ managedcache.TrackingCache, _ client.Client, _ *Comparator,
	_, _, _ string, _ client.Writer) *ObjectEngine {
	return &ObjectEngine{}
}

// NewPhaseEngine is the engine of phases.
func NewPhaseEngine(*ObjectEngine, *validation.ClusterPhaseValidator) *PhaseEngine {
	return &PhaseEngine{}
}

// RevisionEngine reconciles and tears down revisions: here, never.
type RevisionEngine struct{}

// NewRevisionEngine is the engine of revisions.
func NewRevisionEngine(*PhaseEngine, *validation.RevisionValidator, client.Client) *RevisionEngine {
	return &RevisionEngine{}
}

// Reconcile refuses: see ErrUnavailable.
func (*RevisionEngine) Reconcile(context.Context, types.Revision, ...types.RevisionReconcileOption) (RevisionResult, error) {
	return nil, ErrUnavailable
}

// Teardown refuses: see ErrUnavailable.
func (*RevisionEngine) Teardown(context.Context, types.Revision, ...types.RevisionTeardownOption) (RevisionTeardownResult, error) {
	return nil, ErrUnavailable
}
