package rbac_test

import (
	"fmt"
	"strings"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/rbac"
)

// Derive the RBAC of an operator that runs the webapp chart in one namespace.
func ExampleDerive() {
	c, err := chart.Load("../chart/testdata/charts/webapp")
	if err != nil {
		panic(err)
	}
	res, err := rbac.Derive(rbac.Options{Chart: c, Owner: rbac.Owner{Group: "charts.example.com", Resource: "webapps"}, WatchNamespace: "web"})
	if err != nil {
		panic(err)
	}
	for _, k := range res.Kinds {
		fmt.Printf("%s -> %s, gated by %v\n", k.Kind, k.Resource, k.Gates)
	}
	for _, r := range res.Role.Rules {
		fmt.Printf("Role: %s %s\n", r.Resources[0], strings.Join(r.Verbs, ","))
	}
	// Output:
	// ConfigMap -> configmaps, gated by []
	// Service -> services, gated by []
	// Deployment -> deployments, gated by []
	// HorizontalPodAutoscaler -> horizontalpodautoscalers, gated by [autoscaling.enabled]
	// Role: configmaps get,list,watch,create,update,patch,delete
	// Role: events create,patch
	// Role: pods get,list,watch
	// Role: secrets get,list,watch,create,update,patch,delete
	// Role: services get,list,watch,create,update,patch,delete
	// Role: deployments get,list,watch,create,update,patch,delete
	// Role: horizontalpodautoscalers get,list,watch,create,update,patch,delete
	// Role: webapps get,list,watch,update,patch
	// Role: webapps/finalizers update
	// Role: webapps/status get,update,patch
	// Role: leases get,create,update
}
