package bundle

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/chart"
)

// podSpecPaths are where workload kinds keep their pod spec.
var podSpecPaths = map[string][]string{
	"Pod":         {"spec"},
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
}

// operandImages lists the container images (name, image) of the workloads
// in renders, in render order; they become relatedImages so that mirrors for
// disconnected clusters know them. The renders are RBAC derivation's (default
// values, samples, value gates on), so that an image behind a gate is listed
// as surely as the permission to run it is granted. Images of `helm test`
// hooks are left out: the operator never runs them.
func operandImages(renders []*chart.Rendered) [][2]string {
	var out [][2]string
	for _, r := range renders {
		for _, m := range r.Objects {
			path, ok := podSpecPaths[m.Object.GetKind()]
			if !ok || isTestHook(m.Hook) {
				continue
			}
			for _, field := range []string{"initContainers", "containers"} {
				cs, _, _ := unstructured.NestedSlice(m.Object.Object, append(slices.Clone(path), field)...)
				for _, c := range cs {
					cm, _ := c.(map[string]any)
					name, _ := cm["name"].(string)
					image, _ := cm["image"].(string)
					if image != "" && !slices.ContainsFunc(out, func(x [2]string) bool { return x[1] == image }) {
						out = append(out, [2]string{name, image})
					}
				}
			}
		}
	}
	return out
}

// isTestHook says whether a hook annotation's value (a comma-separated list)
// makes the object a `helm test` hook.
func isTestHook(hook string) bool {
	for _, h := range strings.Split(hook, ",") {
		switch strings.TrimSpace(h) {
		case "test", "test-success", "test-failure":
			return true
		}
	}
	return false
}
