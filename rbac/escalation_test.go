package rbac

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/charttest"
)

// The verbs that let a subject widen its own or others' permissions are
// granted only because the chart renders RBAC objects, and each such rule
// says which object needs it (init prints the reasons in role.yaml).
func TestEscalatingVerbsOnlyForChartRBAC(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "*", "testdata", "charts", "*", "Chart.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test charts found: %v", err)
	}
	escalating := []string{"escalate", "bind", "impersonate", "*"}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(dir, func(t *testing.T) {
			c, err := chart.Load(dir)
			if err != nil {
				t.Skipf("not a loadable chart on its own: %v", err)
			}
			res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}})
			if err != nil {
				t.Skipf("not derivable on its own: %v", err)
			}
			rendersRBAC := slices.ContainsFunc(res.Kinds, func(k Kind) bool { return k.Group == "rbac.authorization.k8s.io" })
			for _, r := range res.Rules {
				if !slices.ContainsFunc(r.Verbs, func(v string) bool { return slices.Contains(escalating, v) }) {
					continue
				}
				if !rendersRBAC {
					t.Errorf("%v granted %v, but the chart renders no RBAC object", r.Resources, r.Verbs)
				}
				if !slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, "Role") }) {
					t.Errorf("%v granted %v without naming the role or binding that needs it: %q", r.Resources, r.Verbs, r.Reasons)
				}
			}
		})
	}
}

// A binding to a role the chart does not create needs bind on that role, and
// only on it; role.yaml says which binding needs it.
func TestBindForABindingToAnExistingRole(t *testing.T) {
	c := charttest.Load(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: viewer\nversion: 0.1.0\n",
		"templates/binding.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {{ .Release.Name }}-view\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: default}]\n",
	})
	res, err := Derive(Options{Chart: c, Owner: Owner{Group: "charts.example.com", Resource: "things"}})
	if err != nil {
		t.Fatal(err)
	}
	var bind []Rule
	for _, r := range res.Rules {
		if slices.Contains(r.Verbs, "bind") {
			bind = append(bind, r)
		}
	}
	if len(bind) != 1 || !slices.Equal(bind[0].Resources, []string{"clusterroles"}) || !slices.Equal(bind[0].ResourceNames, []string{"view"}) {
		t.Fatalf("bind rules %+v, want one on clusterroles/view", bind)
	}
	if reason := strings.Join(bind[0].Reasons, " "); !strings.Contains(reason, "RoleBinding") || !strings.Contains(reason, "viewer/templates/binding.yaml") {
		t.Errorf("the bind rule's reason %q does not name the binding and its template", reason)
	}
}
