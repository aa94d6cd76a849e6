// Package probing declares the probes operator-controller's experimental
// ClusterObjectSet controller builds; see machinery/types.
package probing

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Prober is a check of an object's state.
type Prober interface{ isProber() }

// And passes when all its probes pass.
type And []Prober

// ConditionProbe, FieldsEqualProbe and FieldValueProbe are the assertions
// of a ClusterObjectSet's progression probes.
type (
	ConditionProbe   struct{ Type, Status string }
	FieldsEqualProbe struct{ FieldA, FieldB string }
	FieldValueProbe  struct{ FieldPath, Value string }
)

// GroupKindSelector and LabelSelector pick the objects a probe applies
// to; ObservedGenerationProbe waits for the object's controller first.
type (
	GroupKindSelector struct {
		schema.GroupKind
		Prober
	}
	LabelSelector struct {
		Selector labels.Selector
		Prober
	}
	ObservedGenerationProbe struct{ Prober }
)

func (And) isProber()               {}
func (*ConditionProbe) isProber()   {}
func (*FieldsEqualProbe) isProber() {}
func (*FieldValueProbe) isProber()  {}
