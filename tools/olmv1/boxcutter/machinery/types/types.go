// Package types declares what operator-controller's experimental
// ClusterObjectSet controller compiles against (revisions, phases,
// options, probe results); see the managedcache package for why this
// module exists. Nothing here runs: the engine that would read these
// refuses to start (machinery.ErrUnavailable).
package types

import "sigs.k8s.io/controller-runtime/pkg/client"

// Phase is a named group of objects of a revision.
type Phase interface {
	GetName() string
	GetObjects() []client.Object
}

// Revision is a numbered set of phases.
type Revision interface {
	GetName() string
	GetRevisionNumber() int64
	GetPhases() []Phase
}

// RevisionReconcileOption and RevisionTeardownOption are accepted and
// ignored.
type (
	RevisionReconcileOption func()
	RevisionTeardownOption  func()
	ObjectReconcileOption   func()
)

// ProbeStatus is a probe's verdict.
type ProbeStatus string

// ProbeStatusTrue is a probe that passed.
const ProbeStatusTrue ProbeStatus = "True"

// ProbeResult is one probe's verdict on an object.
type ProbeResult struct {
	Status   ProbeStatus
	Messages []string
}
