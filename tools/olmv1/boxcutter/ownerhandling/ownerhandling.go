// Package ownerhandling declares how a revision owns its objects; see
// machinery/types.
package ownerhandling

import "k8s.io/apimachinery/pkg/runtime"

// Native owns objects with ownerReferences.
type Native struct{ scheme *runtime.Scheme }

// NewNative is the ownerReferences strategy of scheme.
func NewNative(scheme *runtime.Scheme) *Native { return &Native{scheme: scheme} }
