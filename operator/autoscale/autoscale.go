package autoscale

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Field is the reserved field of a CR's spec that asks for autoscaling.
const Field = "autoscaling"

// ErrInvalid marks an autoscaling field that can never be applied as it is;
// retrying without a change to the CR cannot help.
var ErrInvalid = errors.New("invalid autoscaling")

// Defaults of a Spec, `helm create`'s.
const (
	DefaultMinReplicas = 1
	DefaultTargetCPU   = 80
)

// Spec is what a CR asks for in its autoscaling field.
type Spec struct {
	// Enabled turns autoscaling on; the other fields are ignored without it.
	Enabled bool `json:"enabled,omitempty"`
	// MinReplicas is the HPA's floor (default 1).
	MinReplicas int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the HPA's ceiling; required when enabled.
	MaxReplicas int32 `json:"maxReplicas,omitempty"`
	// TargetCPUUtilizationPercentage is the average CPU utilisation, in
	// percent of the pods' requests, the HPA aims at. Default 80 unless a
	// memory target is set.
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage,omitempty"`
	// TargetMemoryUtilizationPercentage, when set, adds a memory target.
	TargetMemoryUtilizationPercentage int32 `json:"targetMemoryUtilizationPercentage,omitempty"`
}

// Targets are the kinds the operator adds an HPA for: workloads with a
// scale subresource whose replicas a chart sets.
var Targets = []schema.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"}}

// IsTarget says whether an HPA may be added for gk.
func IsTarget(gk schema.GroupKind) bool { return slices.Contains(Targets, gk) }

// ChartOwns says whether the chart itself reads the autoscaling field: its
// values.yaml has the key, or its values.schema.json declares it. Then the
// CR's field is ordinary values and the operator adds no HPA.
func ChartOwns(ch *chart.Chart) bool {
	if ch == nil {
		return false
	}
	if _, ok := ch.Values[Field]; ok {
		return true
	}
	if len(ch.Schema) == 0 {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(ch.Schema, &s); err != nil {
		return false
	}
	_, ok := s.Properties[Field]
	return ok
}

// Split takes the operator's autoscaling field out of a CR's spec: it
// returns the spec without it (a shallow copy; spec is not changed) and the
// Spec, nil when the field is absent or chartOwns (ChartOwns of the watch's
// chart, computed once: it may parse the chart's schema).
func Split(chartOwns bool, spec any) (any, *Spec, error) {
	m, ok := spec.(map[string]any)
	if !ok || chartOwns {
		return spec, nil, nil
	}
	raw, ok := m[Field]
	if !ok {
		return spec, nil, nil
	}
	rest := make(map[string]any, len(m)-1)
	for k, v := range m {
		if k != Field {
			rest[k] = v
		}
	}
	s, err := parse(raw)
	if err != nil {
		return nil, nil, err
	}
	return rest, s, nil
}

func parse(raw any) (*Spec, error) {
	if raw == nil {
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: spec.%s: %v", ErrInvalid, Field, err)
	}
	var s Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: spec.%s: %v", ErrInvalid, Field, err)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// validate checks an enabled Spec and applies its defaults.
func (s *Spec) validate() error {
	if !s.Enabled {
		return nil
	}
	if s.MinReplicas == 0 {
		s.MinReplicas = DefaultMinReplicas
	}
	if s.TargetCPUUtilizationPercentage == 0 && s.TargetMemoryUtilizationPercentage == 0 {
		s.TargetCPUUtilizationPercentage = DefaultTargetCPU
	}
	switch {
	case s.MinReplicas < 1:
		return fmt.Errorf("%w: spec.%s.minReplicas is %d, want at least 1", ErrInvalid, Field, s.MinReplicas)
	case s.MaxReplicas < s.MinReplicas:
		return fmt.Errorf("%w: spec.%s.maxReplicas is %d, want at least minReplicas (%d)", ErrInvalid, Field, s.MaxReplicas, s.MinReplicas)
	case s.TargetCPUUtilizationPercentage < 0 || s.TargetMemoryUtilizationPercentage < 0:
		return fmt.Errorf("%w: spec.%s: a utilization target is negative", ErrInvalid, Field)
	}
	return nil
}

// On says whether s asks for autoscaling.
func (s *Spec) On() bool { return s != nil && s.Enabled }

// Digest identifies what s makes the post renderer add; empty when it adds
// nothing, so that a release without autoscaling keeps its digest.
func (s *Spec) Digest() string {
	if !s.On() {
		return ""
	}
	data, _ := json.Marshal(s)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// Schema is the OpenAPI schema of the autoscaling field, for the spec of
// the CRDs of charts that do not own the field (see ChartOwns). It lives
// beside Spec so that the two cannot part.
func Schema() apiextensionsv1.JSONSchemaProps {
	count := func(d string, min float64) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Minimum: ptr.To(min), Description: d}
	}
	return apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Description: "Horizontal scaling of the release's Deployments and StatefulSets, reserved by the operator: " +
			"when enabled, it adds a HorizontalPodAutoscaler for each, and leaves their replica count to it.",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"enabled":                           {Type: "boolean", Description: "Adds the HorizontalPodAutoscalers."},
			"minReplicas":                       count("The fewest replicas (default 1).", 1),
			"maxReplicas":                       count("The most replicas; required when enabled, at least minReplicas.", 1),
			"targetCPUUtilizationPercentage":    count("Average CPU utilization to aim at, in percent of the pods' requests (default 80 unless a memory target is set).", 1),
			"targetMemoryUtilizationPercentage": count("Average memory utilization to aim at, in percent of the pods' requests.", 1),
		},
	}
}
