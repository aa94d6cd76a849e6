// Package validation declares the checks run before a revision is
// applied; see machinery/types.
package validation

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterPhaseValidator checks a phase's objects against the cluster.
type ClusterPhaseValidator struct {
	mapper meta.RESTMapper
	reader client.Reader
}

// NewClusterPhaseValidator checks phases with mapper and reader.
func NewClusterPhaseValidator(mapper meta.RESTMapper, reader client.Reader) *ClusterPhaseValidator {
	return &ClusterPhaseValidator{mapper: mapper, reader: reader}
}

// RevisionValidator checks a revision as a whole.
type RevisionValidator struct{}

// NewRevisionValidator checks revisions.
func NewRevisionValidator() *RevisionValidator { return &RevisionValidator{} }
