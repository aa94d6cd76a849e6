package crdschema

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/operator/autoscale"
	"github.com/chartpilot/chartpilot/operator/reconciler"

	valuesutil "helm.sh/helm/v4/pkg/chart/common/util"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Spec is the schema of a chart's values, which a CR's spec holds, with
// warnings about what values.schema.json could not carry over and about
// values the templates read whose types the chart does not prove.
//
// A chart without values.schema.json gets the schema values.yaml shows,
// widened to accept what its templates (and its subcharts') use: see
// FromValuesYAML, TemplateUsage and Widen. Dependencies' conditions and
// tags in Chart.yaml are booleans Helm reads from the values.
func Spec(c *chart.Chart) (*apiextensionsv1.JSONSchemaProps, []Warning, error) {
	s, usage, warnings, err := specOf(c.Helm, c.Name())
	if err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, Widen(s, usage, c.Name())...)
	if defaults, err := valuesutil.CoalesceValues(c.Helm, nil); err == nil {
		warnings = append(warnings, EmptyNumbers(usage, defaults, c.Name())...)
	}
	warnings = append(warnings, addTags(s, c.Helm, c.Name())...)
	warnings = append(warnings, Admit(s, c.Values, c.Name())...)
	return s, warnings, nil
}

// allowNull makes every field of s, at every depth, nullable: a null in a
// CR's spec is Helm's way to delete a default, and the API server drops
// the nulls of fields that are not nullable. The API server checks a null
// against an enum too: a string enum becomes the pattern it is, others
// keep the field as it is.
func allowNull(s *apiextensionsv1.JSONSchemaProps) {
	for k, p := range s.Properties {
		makeNullable(&p)
		allowNull(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		allowNull(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		makeNullable(s.AdditionalProperties.Schema)
		allowNull(s.AdditionalProperties.Schema)
	}
}

func makeNullable(s *apiextensionsv1.JSONSchemaProps) {
	if len(s.Enum) == 0 || enumAsPattern(s) {
		s.Nullable = true
	}
}

// enumAsPattern replaces a string enum by the pattern matching its
// choices, which the API server does not check on a null; false when the
// enum is not of strings or a pattern is set already.
func enumAsPattern(s *apiextensionsv1.JSONSchemaProps) bool {
	if s.Type != "string" || s.Pattern != "" {
		return false
	}
	choices := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		var str string
		if json.Unmarshal(e.Raw, &str) != nil {
			return false
		}
		choices = append(choices, regexp.QuoteMeta(str))
	}
	s.Pattern = "^(?:" + strings.Join(choices, "|") + ")$"
	s.Enum = nil
	return true
}

// specOf is the schema of ch's values, subcharts' under their keys, and
// what the templates of ch and its subcharts (those without
// values.schema.json) use, by path from ch's values and by file from ch.
func specOf(ch *helmchart.Chart, where string) (*apiextensionsv1.JSONSchemaProps, Usage, []Warning, error) {
	s, usage, warnings, err := ownSpec(ch, where)
	if err != nil {
		return nil, nil, nil, err
	}
	var values *apiextensionsv1.JSONSchemaProps
	if ch.Schema != nil && len(ch.Metadata.Dependencies) > 0 {
		// values.schema.json covers this chart's own values; what its
		// values.yaml gives its subcharts is theirs, values all the same.
		if values, err = FromValuesYAML(valuesFile(ch)); err != nil {
			return nil, nil, nil, fmt.Errorf("chart %s: %w", where, err)
		}
	}
	// Subcharts' values sit under their name (or alias) in the parent's.
	for _, subchart := range chart.Subcharts(ch) {
		sub, key := subchart.Chart, subchart.Key
		subSchema, subUsage, ws, err := specOf(sub, where+"/charts/"+key)
		if err != nil {
			return nil, nil, nil, err
		}
		warnings = append(warnings, ws...)
		if values != nil {
			if p, ok := values.Properties[key]; ok {
				subSchema = mergeSchemas(subSchema, &p)
			}
		}
		mergeSubchart(s, subSchema, key, sub.Name())
		if sub.Metadata.Type == "library" {
			// A library's named templates run in the including chart's
			// context: what they read is this chart's values.
			key = ""
		}
		usage.addUnder(subUsage, key, "charts/"+subchart.Key+"/")
	}
	if g, ok := s.Properties["global"]; ok {
		// Helm hands global to every subchart, and charts put anything
		// there (a key a template in the values reads through tpl, say):
		// the keys values.yaml shows are examples, not the list.
		keepUnknownKeys(&g)
		s.Properties["global"] = g
	} else if len(ch.Metadata.Dependencies) > 0 && s.Properties != nil {
		g := anyValue()
		g.Type = "object"
		g.Description = "Values shared with every subchart."
		s.Properties["global"] = *g
	}
	warnings = append(warnings, addConditions(s, ch, where)...)
	return s, usage, warnings, nil
}

// ownSpec is the schema of ch's own values: from values.schema.json, or
// from values.yaml with what ch's templates use (which the caller widens
// the schema with once every subchart is merged).
func ownSpec(ch *helmchart.Chart, where string) (*apiextensionsv1.JSONSchemaProps, Usage, []Warning, error) {
	if ch.Schema != nil {
		s, ws, err := FromJSONSchema(ch.Schema, ch.Values)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("chart %s: %w", where, err)
		}
		var warnings []Warning
		for _, w := range ws {
			warnings = append(warnings, w.prefixed(fmt.Sprintf("chart %s: values.schema.json ", where)))
		}
		// Helm validates values against the chart's schema: what the schema
		// closes, the chart refuses too. What it leaves open, values.yaml
		// may type: its keys get fields, so that the sample's are known.
		inferred, err := FromValuesYAML(valuesFile(ch))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("chart %s: %w", where, err)
		}
		addUndeclared(s, inferred)
		return s, Usage{}, warnings, nil
	}
	s, err := FromValuesYAML(valuesFile(ch))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("chart %s: %w", where, err)
	}
	usage, err := TemplateUsage(ch)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("chart %s: %w", where, err)
	}
	return s, usage, nil, nil
}

// addUndeclared gives s, at each level of an object that values.schema.json
// leaves open to other keys, the fields values.yaml has and the schema does
// not declare, as values.yaml types them.
func addUndeclared(s, inferred *apiextensionsv1.JSONSchemaProps) {
	if s == nil || inferred == nil || s.Type != "object" || inferred.Type != "object" {
		return
	}
	open := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	for k, p := range inferred.Properties {
		declared, ok := s.Properties[k]
		switch {
		case ok:
			addUndeclared(&declared, &p)
			s.Properties[k] = declared
		case open && len(s.Properties) > 0:
			keepUnknown(&p)
			s.Properties[k] = p
		}
	}
}

// keepUnknown opens every object of s to keys values.yaml does not show:
// its defaults name some of a map's keys, never all it may take.
func keepUnknown(s *apiextensionsv1.JSONSchemaProps) {
	if s.Type == "object" && s.AdditionalProperties == nil {
		s.XPreserveUnknownFields = ptr.To(true)
	}
	for k, p := range s.Properties {
		keepUnknown(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		keepUnknown(s.Items.Schema)
	}
}

// valuesFile is the text of ch's values.yaml, nil without one.
func valuesFile(ch *helmchart.Chart) []byte {
	var data []byte
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			data = f.Data
		}
	}
	return data
}

// mergeSubchart puts a subchart's schema under key in its parent's.
func mergeSubchart(s, sub *apiextensionsv1.JSONSchemaProps, key, name string) {
	if s.Properties == nil {
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	if have, ok := s.Properties[key]; ok {
		s.Properties[key] = *mergeSchemas(sub, &have)
		return
	}
	sub.Description = fmt.Sprintf("Values of the %s subchart.", name)
	s.Properties[key] = *sub
}

// mergeSchemas lays over's properties over base's (the parent chart's values
// for a subchart win over the subchart's own); over's description wins too.
func mergeSchemas(base, over *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if isOpen(over) && base.Type == "object" {
		// An empty default in the parent proves nothing; the subchart's does.
		out := base.DeepCopy()
		if over.Description != "" {
			out.Description = over.Description
		}
		return out
	}
	if base.Type != "object" || over.Type != "object" {
		return over
	}
	out := base.DeepCopy()
	if over.Description != "" {
		out.Description = over.Description
	}
	if over.XPreserveUnknownFields != nil && *over.XPreserveUnknownFields {
		out.XPreserveUnknownFields = ptr.To(true)
	}
	if out.Properties == nil && len(over.Properties) > 0 {
		out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	for k, p := range over.Properties {
		if b, ok := out.Properties[k]; ok {
			out.Properties[k] = *mergeSchemas(&b, &p)
		} else {
			out.Properties[k] = p
		}
	}
	return out
}

// Status is the schema of the status the operator runtime writes: the
// runtime's own definition, so that what it writes is never pruned.
func Status() apiextensionsv1.JSONSchemaProps { return reconciler.StatusSchema() }

// addAutoscaling declares the runtime's reserved autoscaling field in spec,
// unless the chart's values own that key (see package operator/autoscale).
func addAutoscaling(spec *apiextensionsv1.JSONSchemaProps, ch *helmchart.Chart) {
	if autoscale.ChartOwns(ch) {
		return
	}
	if spec.Properties == nil {
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	}
	spec.Properties[autoscale.Field] = autoscale.Schema()
}

// Options name the custom resource.
type Options struct {
	// Group, Version and Kind of the custom resource, e.g. charts.example.com,
	// v1alpha1, Webapp. Required.
	Group, Version, Kind string
	// Plural is the resource name (default: lower-case kind + "s", as
	// operator-sdk does).
	Plural string
}

// Plural is operator-sdk's plural of a kind: lower case, plus "s" (with
// "es"/"ies" the way kubectl guesses).
func Plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	}
	return k + "s"
}

// CRD builds the CustomResourceDefinition of a chart's custom resource:
// namespaced, one served and stored version, the status subresource, spec
// from the chart's values and status for what the runtime writes.
func CRD(c *chart.Chart, opts Options) (*apiextensionsv1.CustomResourceDefinition, []Warning, error) {
	if opts.Group == "" || opts.Version == "" || opts.Kind == "" {
		return nil, nil, fmt.Errorf("CRD for chart %s: group, version and kind are required", c.Name())
	}
	if opts.Plural == "" {
		opts.Plural = Plural(opts.Kind)
	}
	spec, warnings, err := Spec(c)
	if err != nil {
		return nil, nil, err
	}
	spec.Description = fmt.Sprintf("Values of the %s chart (its values.yaml), merged over the chart's defaults.", c.Name())
	allowNull(spec)
	addAutoscaling(spec, c.Helm)
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Plural + "." + opts.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: opts.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind:     opts.Kind,
				ListKind: opts.Kind + "List",
				Plural:   opts.Plural,
				Singular: strings.ToLower(opts.Kind),
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    opts.Version,
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:        "object",
					Description: fmt.Sprintf("%s is an instance of the %s Helm chart, managed by its operator.", opts.Kind, c.Name()),
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": {Type: "string", Description: "APIVersion defines the versioned schema of this representation of an object."},
						"kind":       {Type: "string", Description: "Kind is a string value representing the REST resource this object represents."},
						"metadata":   {Type: "object"},
						"spec":       *spec,
						"status":     Status(),
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	return crd, warnings, nil
}
