package release

import (
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// What Helm changes in the copy an action gets (the subcharts, their
// metadata, the values it imports) stays out of the chart copied.
func TestForAction(t *testing.T) {
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "sub", Version: "0.1.0"}}
	parent := &chart.Chart{Metadata: &chart.Metadata{Name: "parent", Version: "0.1.0",
		Dependencies: []*chart.Dependency{{Name: "sub", Version: "0.1.0", Condition: "sub.enabled"}}}, Values: map[string]any{"a": 1}}
	parent.SetDependencies(sub)

	c := forAction(parent)
	c.Metadata.Dependencies[0].Enabled, c.Metadata.Dependencies[0].Name = true, "alias"
	if c.Dependencies()[0].Parent() != c {
		t.Error("the copied subchart's parent is not the copy")
	}
	c.Metadata.Dependencies = nil
	c.SetDependencies()
	c.Values = map[string]any{"imported": true}

	if len(parent.Dependencies()) != 1 || parent.Dependencies()[0] != sub || sub.Parent() != parent {
		t.Error("the original lost its subchart")
	}
	if d := parent.Metadata.Dependencies; len(d) != 1 || d[0].Enabled || d[0].Name != "sub" {
		t.Errorf("the original's dependency metadata changed: %+v", d)
	}
	if parent.Values["imported"] != nil {
		t.Error("the original's values changed")
	}
	if forAction(nil) != nil {
		t.Error("a nil chart copied as not nil")
	}
}
