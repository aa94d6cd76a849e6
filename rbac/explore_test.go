package rbac

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// variantStrings lists variants as "path=value" with Go's %v of the value.
func variantStrings(vs []variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%s=%v", v.Path, v.Value))
	}
	return out
}

func TestPathVariants(t *testing.T) {
	g := &chartGates{Printed: map[string]bool{"existingSecret": true}, Ranged: map[string]bool{"hosts": true},
		Mapped: map[string]bool{}, Templated: map[string]bool{}, Refs: map[string]bool{"tls.cert": true, "tls.key": true, "hosts.*.name": true}}
	tests := []struct {
		name      string
		base      map[string]any
		path      string
		atoms     []atom
		on, other []string
	}{{
		name: "a boolean off by default", base: map[string]any{"enabled": false},
		path: "enabled", atoms: []atom{{Path: "enabled"}},
		on: []string{"enabled=true"},
	}, {
		name: "a boolean on by default, no else: nothing to try", base: map[string]any{"enabled": true},
		path: "enabled", atoms: []atom{{Path: "enabled"}},
	}, {
		name: "a boolean on by default with an else", base: map[string]any{"enabled": true},
		path: "enabled", atoms: []atom{{Path: "enabled", Else: true}},
		other: []string{"enabled=false"},
	}, {
		name: "turning on a negated test turns the other off", base: map[string]any{"x": true},
		path: "x", atoms: []atom{{Path: "x", Else: true}, {Path: "x", Negated: true}},
		other: []string{"x=false"},
	}, {
		name: "gt over the default", base: map[string]any{"replicaCount": float64(1)},
		path: "replicaCount", atoms: []atom{{Path: "replicaCount", Op: opGt, Lit: int64(1)}},
		on: []string{"replicaCount=2"},
	}, {
		name: "an enum's members, the default's own leaves the others", base: map[string]any{"mode": "server"},
		path: "mode", atoms: []atom{{Path: "mode", Op: opEq, Lit: "server", Else: true}, {Path: "mode", Op: opEq, Lit: "cron"}, {Path: "mode", Op: opEq, Lit: "job"}},
		other: []string{"mode=cron", "mode=job"},
	}, {
		name: "a printed string", base: map[string]any{"existingSecret": ""},
		path: "existingSecret", atoms: []atom{{Path: "existingSecret"}},
		on: []string{"existingSecret=" + ExploredValue},
	}, {
		name: "a map whose fields the templates read", base: map[string]any{},
		path: "tls", atoms: []atom{{Path: "tls"}},
		on: []string{"tls=map[cert:" + ExploredValue + " key:" + ExploredValue + "]"},
	}, {
		name: "a list the templates iterate, its elements' fields", base: map[string]any{"hosts": []any{}},
		path: "hosts", atoms: []atom{{Path: "hosts", Shape: shapeRange}},
		on: []string{"hosts=[map[name:" + ExploredValue + "]]"},
	}, {
		name: "has", base: map[string]any{"features": []any{"a"}},
		path: "features", atoms: []atom{{Path: "features", Op: opHas, Lit: "pdb"}},
		on: []string{"features=[a pdb]"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			on, other := pathVariants(tt.path, tt.atoms, tt.base, g)
			if got := variantStrings(on); !reflect.DeepEqual(got, tt.on) {
				t.Errorf("on = %q, want %q", got, tt.on)
			}
			if got := variantStrings(other); !reflect.DeepEqual(got, tt.other) {
				t.Errorf("other = %q, want %q", got, tt.other)
			}
		})
	}
}

// The first set turns every gate on; each later one is the first with
// other choices; values that cannot hold together are split.
func TestPlanExploration(t *testing.T) {
	g := &chartGates{Templates: map[string]*templateGates{
		"c/templates/a.yaml": {Atoms: []atom{{Path: "metrics.enabled"}, {Path: "metrics.serviceMonitor.enabled"}}},
		"c/templates/b.yaml": {Atoms: []atom{{Path: "mode", Op: opEq, Lit: "server", Else: true}, {Path: "mode", Op: opEq, Lit: "cron"}, {Path: "mode", Op: opEq, Lit: "job"}}},
		"c/templates/c.yaml": {Atoms: []atom{{Path: "metrics"}}},
	}, Printed: map[string]bool{}, Ranged: map[string]bool{}, Mapped: map[string]bool{}, Templated: map[string]bool{}, Refs: map[string]bool{}}
	base := map[string]any{"mode": "server", "metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": false}}}
	plan := planExploration(g, base)
	var got []string
	for _, s := range plan.Sets {
		got = append(got, strings.Join(variantStrings(s), " "))
	}
	want := []string{
		"metrics.enabled=true metrics.serviceMonitor.enabled=true",
		"metrics.enabled=true metrics.serviceMonitor.enabled=true mode=cron",
		"metrics.enabled=true metrics.serviceMonitor.enabled=true mode=job",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sets:\n got %q\nwant %q", got, want)
	}
}

func TestRenderErrorsNameTheirCause(t *testing.T) {
	g := &chartGates{
		Required: []requiredCall{{Path: "ui.message", Message: "set ui.message", Locations: []string{"c/templates/cm.yaml:6:10", "c/templates/cm.yaml:6:43"}}},
		Fails:    []failCall{{Location: "c/templates/hpa.yaml:3:4", Guards: []guard{{Atoms: []atom{{Path: "autoscaling.enabled"}}}}}},
	}
	tests := []struct {
		err              string
		required, failed string
		template         string
	}{
		{err: "rendering chart c: execution error at (c/templates/cm.yaml:6:10): set ui.message", required: "ui.message", template: "c/templates/cm.yaml"},
		// A required value under a missing map fails on the value itself.
		{err: `template: c/templates/cm.yaml:6:43: executing "c/templates/cm.yaml" at <.Values.ui.message>: nil pointer evaluating interface {}.message`, required: "ui.message", template: "c/templates/cm.yaml"},
		// A required call in a helper is reported at the include: the message tells.
		{err: "execution error at (c/templates/other.yaml:2:3): set ui.message", required: "ui.message", template: "c/templates/other.yaml"},
		{err: "execution error at (c/templates/hpa.yaml:3:4): maxReplicas please", failed: "c/templates/hpa.yaml:3:4", template: "c/templates/hpa.yaml"},
		{err: "YAML parse error on c/templates/x.yaml: error converting YAML to JSON", template: "c/templates/x.yaml"},
		{err: "something else"},
	}
	for _, tt := range tests {
		err := errors.New(tt.err)
		req, ok := requiredFor(g, err)
		if ok != (tt.required != "") || req.Path != tt.required {
			t.Errorf("requiredFor(%q) = %q, %t; want %q", tt.err, req.Path, ok, tt.required)
		}
		f, ok := failFor(g, err)
		if ok != (tt.failed != "") || f.Location != tt.failed {
			t.Errorf("failFor(%q) = %q, %t; want %q", tt.err, f.Location, ok, tt.failed)
		}
		if got := failingTemplate(err); got != tt.template {
			t.Errorf("failingTemplate(%q) = %q, want %q", tt.err, got, tt.template)
		}
	}
}
