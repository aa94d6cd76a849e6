package demo

import (
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/cluster"
)

// OLM v1 installs only images: the journey takes it where it goes through
// images (a real node), and says why not and what to do elsewhere.
func TestResolveOLM(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want cluster.OLMVersions
		// errIn are substrings of the error, when one is wanted.
		errIn []string
	}{
		{name: "default on a real node", opts: Options{Node: cluster.NodeReal}, want: cluster.OLMBoth},
		{name: "default on a kwok node", opts: Options{Node: cluster.NodeKwok}, want: cluster.OLMv0},
		{name: "default on a given cluster", opts: Options{Kubeconfig: "kc"}, want: cluster.OLMv0},
		{name: "v1 on a real node", opts: Options{Node: cluster.NodeReal, OLM: cluster.OLMv1}, want: cluster.OLMv1},
		{name: "v0 on a kwok node", opts: Options{Node: cluster.NodeKwok, OLM: cluster.OLMv0}, want: cluster.OLMv0},
		{name: "v1 on a kwok node", opts: Options{Node: cluster.NodeKwok, OLM: cluster.OLMv1},
			errIn: []string{"--olm=v1", "kwok node", "bundle and catalog images", "--node real", "--olm=v0"}},
		{name: "both on a given cluster", opts: Options{Kubeconfig: "kc", OLM: cluster.OLMBoth},
			errIn: []string{"--olm=both", "--use-cluster", "--olm=v0"}},
		{name: "unknown", opts: Options{Node: cluster.NodeReal, OLM: "v2"}, errIn: []string{`unknown OLM "v2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &demo{opts: tt.opts}
			err := d.resolveOLM()
			if len(tt.errIn) > 0 {
				if err == nil {
					t.Fatalf("no error, OLM %s", d.opts.OLM)
				}
				for _, s := range tt.errIn {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q: %v", s, err)
					}
				}
				return
			}
			if err != nil || d.opts.OLM != tt.want {
				t.Errorf("OLM %q, %v; want %s", d.opts.OLM, err, tt.want)
			}
		})
	}
}

// OLM v1's journey alone builds what OLM v0's journey would, with the same
// steps, and goes through OLM v1's steps with v0.2.0 released between the
// install and the upgrade.
func TestV1Steps(t *testing.T) {
	d := &demo{}
	titles := func(steps []step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.title)
		}
		return out
	}
	alone := titles(d.v1BuildSteps())
	build := titles(d.buildSteps())
	v1 := titles(d.v1Steps())
	if len(alone) != len(build)+len(v1)+1 {
		t.Fatalf("OLM v1 alone has %d steps, want %d built + %d of OLM v1 + the release:\n%s", len(alone), len(build), len(v1), strings.Join(alone, "\n"))
	}
	for i, s := range build {
		if alone[i] != s {
			t.Errorf("step %d is %q, want %q", i+1, alone[i], s)
		}
	}
	release := strings.Index(strings.Join(alone, "\n"), "Release v0.2.0")
	install := strings.Index(strings.Join(alone, "\n"), "olm v1 install")
	upgrade := strings.Index(strings.Join(alone, "\n"), "olm v1 upgrade")
	if !(install < release && release < upgrade) {
		t.Errorf("want install, then the release of v0.2.0, then the upgrade:\n%s", strings.Join(alone, "\n"))
	}
}
