// Package boxcutter declares how operator-controller's experimental
// ClusterObjectSet controller builds revisions; see machinery/types.
package boxcutter

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"pkg.package-operator.run/boxcutter/machinery/types"
	"pkg.package-operator.run/boxcutter/ownerhandling"
	"pkg.package-operator.run/boxcutter/probing"
)

// The types revisions are built from.
type (
	Phase                   = types.Phase
	RevisionBuilder         = types.Revision
	RevisionReconcileOption = types.RevisionReconcileOption
	ObjectReconcileOption   = types.ObjectReconcileOption
)

// ProgressProbeType keys the probe that decides a rollout's progress.
const ProgressProbeType = "Progress"

type phase struct {
	name string
	objs []client.Object
}

func (p phase) GetName() string             { return p.name }
func (p phase) GetObjects() []client.Object { return p.objs }

// NewPhase is a named group of objects.
func NewPhase(name string, objs []client.Object) Phase { return phase{name: name, objs: objs} }

type revision struct {
	name   string
	number int64
	phases []Phase
}

func (r revision) GetName() string          { return r.name }
func (r revision) GetRevisionNumber() int64 { return r.number }
func (r revision) GetPhases() []Phase       { return r.phases }

// NewRevisionWithOwner is a revision of phases that owner owns.
func NewRevisionWithOwner(name string, number int64, phases []Phase, _ client.Object, _ *ownerhandling.Native) RevisionBuilder {
	return revision{name: name, number: number, phases: phases}
}

// The options of a reconcile; the engine that would read them is not
// built (machinery.ErrUnavailable).
func WithSiblingOwners([]client.Object) RevisionReconcileOption  { return func() {} }
func WithProbe(string, probing.Prober) RevisionReconcileOption   { return func() {} }
func WithAggregatePhaseReconcileErrors() RevisionReconcileOption { return func() {} }
func WithCollisionProtection[T ~string](T) ObjectReconcileOption { return func() {} }
func WithObjectReconcileOptions(client.Object, ...ObjectReconcileOption) RevisionReconcileOption {
	return func() {}
}
