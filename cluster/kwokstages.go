package cluster

import (
	"os"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// readyAgainStage is a kwok stage of chartpilot's own, beside kwok's: a
// running pod whose Ready condition is not True becomes Ready again.
//
// When the kwok node misses its heartbeats (the API server, kwok or the
// controller manager was down for longer than the node monitor's grace
// period), the node lifecycle controller marks the node unknown and every
// pod on it Ready=False, as it does for a real node. kwok's own stages make
// the node Ready again but a pod ready only while it is Pending, so every
// pod stayed not Ready for good; a kubelet would report its containers
// ready again, and this stage does so. Jobs' pods are left to kwok's
// pod-complete stage.
const readyAgainStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: chartpilot-pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'NotIn'
      values:
      - 'Job'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
`

// kwokStagesFile holds chartpilot's own kwok stages.
func (c *Cluster) kwokStagesFile() string { return c.path("run", "kwok-stages.yaml") }

// writeKwokStages writes chartpilot's own kwok stages, for kwok to load
// after its own.
func (c *Cluster) writeKwokStages() error {
	if err := os.MkdirAll(c.path("run"), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(c.kwokStagesFile(), []byte(readyAgainStage), 0o644)
}
