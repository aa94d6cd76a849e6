package demo

import (
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/cluster"
)

// The journey goes through both OLMs on the cluster it starts, through
// OLM v0 alone on a cluster it is given unless asked (that cluster may run
// no OLM v1).
func TestResolveOLM(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		want    cluster.OLMVersions
		wantErr string
	}{
		{name: "default on a real node", opts: Options{Node: cluster.NodeReal}, want: cluster.OLMBoth},
		{name: "default on a kwok node", opts: Options{Node: cluster.NodeKwok}, want: cluster.OLMBoth},
		{name: "default on a given cluster", opts: Options{Kubeconfig: "kc"}, want: cluster.OLMv0},
		{name: "v1 on a kwok node", opts: Options{Node: cluster.NodeKwok, OLM: cluster.OLMv1}, want: cluster.OLMv1},
		{name: "both on a given cluster", opts: Options{Kubeconfig: "kc", OLM: cluster.OLMBoth}, want: cluster.OLMBoth},
		{name: "v0", opts: Options{OLM: cluster.OLMv0}, want: cluster.OLMv0},
		{name: "unknown", opts: Options{OLM: "v2"}, wantErr: `unknown OLM "v2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &demo{opts: tt.opts}
			err := d.resolveOLM()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
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
	t.Run("real node", func(t *testing.T) { checkV1Steps(t, d.v1BuildSteps(), d.buildSteps(), d.v1Steps()) })
	t.Run("kwok node", func(t *testing.T) { checkV1Steps(t, d.kwokV1AloneSteps(), d.kwokBuildSteps(), d.kwokV1Journey()) })
}

func checkV1Steps(t *testing.T, aloneSteps, buildSteps, v1Steps []step) {
	t.Helper()
	titles := func(steps []step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.title)
		}
		return out
	}
	alone := titles(aloneSteps)
	build := titles(buildSteps)
	v1 := titles(v1Steps)
	if len(alone) < len(build)+len(v1)+1 {
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
