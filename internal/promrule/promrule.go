package promrule

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Kind and Group of the objects Validate takes.
const (
	Group = "monitoring.coreos.com"
	Kind  = "PrometheusRule"
)

// Validate parses the rule groups of a PrometheusRule as Prometheus loads a
// rule file: every expression with the PromQL parser, every label and
// annotation template, durations, names. The errors name the object.
func Validate(obj *unstructured.Unstructured) error {
	if gk := obj.GroupVersionKind().GroupKind(); gk.Group != Group || gk.Kind != Kind {
		return fmt.Errorf("%s %s is not a %s.%s", obj.GetKind(), obj.GetName(), Kind, Group)
	}
	spec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("PrometheusRule %s: no spec", obj.GetName())
	}
	groups, _ := spec["groups"].([]any)
	if len(groups) == 0 {
		return fmt.Errorf("PrometheusRule %s: spec.groups is empty", obj.GetName())
	}
	// spec is a rule file's content: {groups: [...]}.
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		return fmt.Errorf("PrometheusRule %s: %w", obj.GetName(), err)
	}
	if err := ValidateRuleFile(data); err != nil {
		return fmt.Errorf("PrometheusRule %s: %w", obj.GetName(), err)
	}
	return nil
}

// ValidateRuleFile parses a Prometheus rule file.
func ValidateRuleFile(data []byte) error {
	_, errs := rulefmt.Parse(data, false, model.UTF8Validation, newParser(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	return errors.Join(errs...)
}

// ValidateExpr parses one PromQL expression.
func ValidateExpr(expr string) error {
	if _, err := newParser().ParseExpr(expr); err != nil {
		return fmt.Errorf("%q: %w", expr, err)
	}
	return nil
}

func newParser() parser.Parser { return parser.NewParser(parser.Options{}) }

// Metrics lists the metric names the expressions of a PrometheusRule
// select, sorted, once each: what the rule needs a target to export.
func Metrics(obj *unstructured.Unstructured) ([]string, error) {
	groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "groups")
	seen := map[string]bool{}
	p := newParser()
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(asMap(g), "rules")
		for _, r := range rules {
			expr, _, _ := unstructured.NestedString(asMap(r), "expr")
			node, err := p.ParseExpr(expr)
			if err != nil {
				return nil, fmt.Errorf("PrometheusRule %s: %q: %w", obj.GetName(), expr, err)
			}
			parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
					seen[vs.Name] = true
				}
				return nil
			})
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
