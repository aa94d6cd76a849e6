package bundle

import (
	"slices"

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

// operandImages lists the container images (name, image) a chart runs with
// its default values and with each sample's values, in render order; they
// become relatedImages so that mirrors for disconnected clusters know them.
func operandImages(c *chart.Chart, kubeVersion string, samples []map[string]any) ([][2]string, error) {
	var out [][2]string
	for _, values := range append([]map[string]any{nil}, samples...) {
		r, err := c.Render(chart.RenderOptions{Values: values, KubeVersion: kubeVersion})
		if err != nil {
			return nil, err
		}
		for _, m := range r.Objects {
			path, ok := podSpecPaths[m.Object.GetKind()]
			if !ok {
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
	return out, nil
}
