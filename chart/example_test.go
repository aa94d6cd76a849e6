package chart_test

import (
	"fmt"

	"github.com/chartpilot/chartpilot/chart"
)

// Render a chart with a value gate turned on, as `helm template` would.
func ExampleChart_Render() {
	c, err := chart.Load("testdata/charts/webapp")
	if err != nil {
		panic(err)
	}
	r, err := c.Render(chart.RenderOptions{ReleaseName: "demo", Values: map[string]any{"autoscaling": map[string]any{"enabled": true}}})
	if err != nil {
		panic(err)
	}
	for _, m := range r.Objects {
		fmt.Println(m.Source, m.Object.GetKind(), m.Object.GetName())
	}
	// Output:
	// webapp/templates/configmap.yaml ConfigMap demo-webapp
	// webapp/templates/service.yaml Service demo-webapp
	// webapp/templates/deployment.yaml Deployment demo-webapp
	// webapp/templates/hpa.yaml HorizontalPodAutoscaler demo-webapp
}
