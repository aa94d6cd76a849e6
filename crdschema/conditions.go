package crdschema

import (
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// addConditions declares the values paths of ch's dependencies' conditions
// (Chart.yaml `condition: sub.enabled,other.enabled`, relative to ch's
// values) that values.yaml leaves out: Helm honours only booleans there.
func addConditions(s *apiextensionsv1.JSONSchemaProps, ch *helmchart.Chart, where string) []Warning {
	var warnings []Warning
	for _, dep := range ch.Metadata.Dependencies {
		for _, c := range strings.Split(dep.Condition, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			desc := fmt.Sprintf("Whether the %s subchart is installed (its condition in Chart.yaml).", dep.Name)
			if ensureBool(s, strings.Split(c, "."), desc) {
				warnings = append(warnings, warnf(Undeclared, ".Values."+c, "chart %s: Chart.yaml's condition of dependency %s reads .Values.%s, which values.yaml does not declare: the CRD accepts a boolean there", where, dep.Name, c))
			}
		}
	}
	return warnings
}

// addTags declares tags.<tag> for every tag of a dependency of ch or of its
// subcharts, which Helm reads from the top-level values, when values.yaml
// leaves them out.
func addTags(s *apiextensionsv1.JSONSchemaProps, ch *helmchart.Chart, where string) []Warning {
	tags := map[string]string{} // tag -> a dependency it is of
	var collect func(c *helmchart.Chart)
	collect = func(c *helmchart.Chart) {
		for _, dep := range c.Metadata.Dependencies {
			for _, t := range dep.Tags {
				if _, ok := tags[t]; !ok {
					tags[t] = dep.Name
				}
			}
		}
		for _, sub := range c.Dependencies() {
			collect(sub)
		}
	}
	collect(ch)
	names := make([]string, 0, len(tags))
	for t := range tags {
		names = append(names, t)
	}
	sort.Strings(names)
	var warnings []Warning
	for _, t := range names {
		desc := fmt.Sprintf("Whether the subcharts tagged %s are installed, unless their conditions say otherwise.", t)
		if ensureBool(s, []string{"tags", t}, desc) {
			warnings = append(warnings, warnf(Undeclared, ".Values.tags."+t, "chart %s: Chart.yaml's tag %s of dependency %s is read from .Values.tags.%s, which values.yaml does not declare: the CRD accepts a boolean there", where, t, tags[t], t))
		}
	}
	return warnings
}

// ensureBool adds path to s as a boolean described by desc (with maps
// above it) unless s already accepts it; it reports whether it added it.
func ensureBool(s *apiextensionsv1.JSONSchemaProps, path []string, desc string) bool {
	if len(path) == 0 || s.Type != "object" {
		return false
	}
	p, ok := s.Properties[path[0]]
	if ok {
		added := ensureBool(&p, path[1:], desc)
		s.Properties[path[0]] = p
		return added
	}
	if preserves(s) {
		return false
	}
	if s.Properties == nil {
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	s.Properties[path[0]] = boolAt(path[1:], desc)
	return true
}

// boolAt is a boolean described by desc at path below a map.
func boolAt(path []string, desc string) apiextensionsv1.JSONSchemaProps {
	if len(path) == 0 {
		return apiextensionsv1.JSONSchemaProps{Type: "boolean", Description: desc}
	}
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{path[0]: boolAt(path[1:], desc)}}
}
