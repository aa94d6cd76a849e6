package installer

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

func TestSmoke(t *testing.T) {
	var bs []*olmv1.Bundle
	for _, d := range []string{"../olmv1/testdata/widget-0.1.0", "testdata/widget-0.2.0"} {
		b, err := olmv1.Load(os.DirFS(d))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	r, err := Rules(Options{Namespace: "widget-system"}, bs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range r.Objects() {
		y, _ := yaml.Marshal(o)
		t.Logf("---\n%s", y)
	}
	t.Log(r.Count(), r.Warnings)
}
