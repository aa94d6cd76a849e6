package rbac

import (
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
)

// TestRoleYAMLReadsBack checks that role.yaml holds exactly the derived
// objects, with a comment naming the gating value of gated kinds.
func TestRoleYAMLReadsBack(t *testing.T) {
	for _, tt := range []struct {
		chart, namespace string
		comment          string
	}{
		{"webapp", "", "# autoscaling/v2 HorizontalPodAutoscaler (webapp/templates/hpa.yaml) when autoscaling.enabled is set"},
		{"umbrella", "ops", "# policy/v1 PodDisruptionBudget (umbrella/charts/cache/templates/pdb.yaml) when cache.pdb.enabled is set"},
		{"clusterwide", "ops", "# held so that Helm may create ClusterRole release-node-reader"},
	} {
		t.Run(tt.chart, func(t *testing.T) {
			c, err := chart.Load(chartDir(tt.chart))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}, WatchNamespace: tt.namespace})
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.RoleYAML())
			if !strings.Contains(out, tt.comment) {
				t.Errorf("role.yaml lacks %q:\n%s", tt.comment, out)
			}
			docs := strings.Split(out, "\n---\n")
			var cr rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(docs[0]), &cr); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&cr, res.ClusterRole) {
				t.Errorf("ClusterRole read back:\n%+v\nwant\n%+v", cr, res.ClusterRole)
			}
			if tt.namespace == "" {
				if len(docs) != 1 {
					t.Errorf("%d documents, want 1", len(docs))
				}
				return
			}
			var role rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(docs[1]), &role); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&role, res.Role) {
				t.Errorf("Role read back:\n%+v\nwant\n%+v", role, res.Role)
			}
		})
	}
}
