package reconciler

import (
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/operator/health"
)

// StatusSchema is the OpenAPI schema of Status, for the CRDs of the kinds
// this runtime reconciles. It lives beside the type it describes so that the
// two cannot part: a field the schema lacks is pruned by the API server on
// every write (TestStatusSchemaKeepsEverything).
func StatusSchema() apiextensionsv1.JSONSchemaProps {
	str := func(d string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: d}
	}
	generation := func(d string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64", Minimum: ptr.To(0.0), Description: d}
	}
	return apiextensionsv1.JSONSchemaProps{
		Type:        "object",
		Description: "What the operator last observed and did.",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"observedGeneration": generation("The generation of the spec the status is about."),
			"conditions": {
				Type:         "array",
				Description:  "The latest observations of the release's state.",
				XListType:    ptr.To("map"),
				XListMapKeys: []string{"type"},
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
					Type:     "object",
					Required: []string{"type", "status"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"type": str("The condition's type, e.g. Deployed or ReleaseFailed."),
						"status": {Type: "string", Description: "True, False or Unknown.",
							Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}}},
						"observedGeneration": generation("The generation of the spec the condition is about."),
						"reason":             str("A CamelCase reason for the last transition."),
						"message":            str("A human-readable message about the transition."),
						"lastTransitionTime": {Type: "string", Format: "date-time", Description: "When the status last changed."},
					},
				}},
			},
			"deployedRelease": {
				Type:        "object",
				Description: "The Helm release the operator last deployed.",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"name":       str("The release name."),
					"version":    {Type: "integer", Description: "The release revision."},
					"chart":      str("The chart name and version."),
					"appVersion": str("The chart's appVersion."),
					"digest":     str("Digest of the chart and values of the release."),
				},
			},
			"health": {
				Type:        "object",
				Description: "The objects of the release (and pods of its workloads) that are not healthy, and why; absent when all are.",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"unhealthy": {Type: "integer", Minimum: ptr.To(0.0), Description: "How many objects are not healthy; problems lists the most severe."},
					"problems": {
						Type:        "array",
						Description: "At most " + strconv.Itoa(health.MaxProblems) + " objects not healthy, failures first.",
						MaxItems:    ptr.To(int64(health.MaxProblems)),
						Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
							Type:     "object",
							Required: []string{"kind", "name", "reason"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"kind":      str("The object's kind, e.g. Pod or Deployment."),
								"namespace": str("The object's namespace."),
								"name":      str("The object's name."),
								"reason":    str("Why it is not healthy: CrashLoopBackOff, ImagePullBackOff, ProgressDeadlineExceeded, ClaimPending, JobFailed, Unschedulable, NotReady..."),
								"message":   str("What is wrong: the container, its last exit code, the image that cannot be pulled..."),
							},
						}},
					},
				},
			},
		},
	}
}
