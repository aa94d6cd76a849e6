package crdschema

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// Widen opens schema s, inferred from values.yaml, wherever usage shows the
// templates accept more than the defaults tell: paths values.yaml does not
// declare are added (any value, or a map when fields are read below them),
// values handed whole to toYaml, tpl or include are free-form, ranged maps
// keep unknown keys, and a path whose default contradicts its use accepts
// any value. The warnings name the files and paths whose types the chart
// does not prove; where is the chart's name for them.
func Widen(s *apiextensionsv1.JSONSchemaProps, usage Usage, where string) []Warning {
	var warnings []Warning
	for _, u := range usage.Sorted() {
		if w := widenPath(s, u.Path, u, 0); w.Kind != 0 {
			warnings = append(warnings, w.prefixed(fmt.Sprintf("chart %s: %s ", where, filesOf(u.Files))))
		}
	}
	return warnings
}

// EmptyNumbers warns of the values paths templates read as numbers whose
// default in values (the chart's, subcharts' below their keys) is "":
// the CRD leaves them open, since "" is no number but the chart accepts it.
func EmptyNumbers(usage Usage, values map[string]any, where string) []Warning {
	var warnings []Warning
	for _, u := range usage.Sorted() {
		if u.Use&UseNumber == 0 {
			continue
		}
		if v, ok := lookup(values, u.Path); ok && v == "" {
			warnings = append(warnings, warnf(Opened, ".Values."+u.Dotted(), "chart %s: %s reads .Values.%s as a number, but its default is \"\": the CRD accepts any value there", where, filesOf(u.Files), u.Dotted()))
		}
	}
	return warnings
}

// lookup is the value at path in values.
func lookup(values map[string]any, path []string) (any, bool) {
	var cur any = values
	for _, seg := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// filesOf names up to three files.
func filesOf(files []string) string {
	if len(files) > 3 {
		return fmt.Sprintf("%s (and %d more files)", strings.Join(files[:3], ", "), len(files)-3)
	}
	return strings.Join(files, ", ")
}

// isOpen is a schema accepting any value.
func isOpen(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// widenPath widens s for u below s's level depth of u.Path and returns a
// warning when the chart does not prove the type of what it opened (none:
// Kind 0).
func widenPath(s *apiextensionsv1.JSONSchemaProps, path []string, u *PathUse, depth int) Warning {
	switch {
	case len(path) == 1 && path[0] == AnyKeys:
		return anyKey(s, u)
	case isOpen(s) || s.XIntOrString:
		return Warning{}
	case len(path) == 0:
		return widenLeaf(s, u, depth)
	case s.Type == "array" && path[0] == Elem:
		if s.Items == nil || s.Items.Schema == nil {
			s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: anyValue()}
		}
		return widenPath(s.Items.Schema, path[1:], u, depth+1)
	case s.Type != "object":
		was := s.Type
		reopen(s)
		return warnf(Opened, ".Values."+dotted(u.Path[:depth]), "reads .Values.%s, below %s in values.yaml: the CRD accepts any value at .Values.%s",
			u.Dotted(), article(was), dotted(u.Path[:depth]))
	case path[0] == Elem:
		return Warning{} // an entry of a ranged map: its keys are open already
	}
	p, ok := s.Properties[path[0]]
	if !ok {
		if preserves(s) {
			return Warning{}
		}
		if s.Properties == nil {
			s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		// Its type is unknown: a map when fields are read below it, but
		// what it holds is not, and a helper may test its kind.
		s.Properties[path[0]] = *anyValue()
		return warnf(Undeclared, ".Values."+dotted(u.Path[:depth+1]), "reads .Values.%s, which values.yaml does not declare: the CRD accepts any value there",
			dotted(u.Path[:depth+1]))
	}
	w := widenPath(&p, path[1:], u, depth+1)
	s.Properties[path[0]] = p
	return w
}

// reopen makes s accept any value, keeping its description.
func reopen(s *apiextensionsv1.JSONSchemaProps) {
	*s = apiextensionsv1.JSONSchemaProps{Description: s.Description, XPreserveUnknownFields: ptr.To(true), Nullable: s.Nullable}
}

// widenLeaf applies the uses of the path s is the schema of. A use that
// contradicts the default (fields read from a string, a range over a
// number) wins: values.yaml's example is not the only value meant.
func widenLeaf(s *apiextensionsv1.JSONSchemaProps, u *PathUse, depth int) Warning {
	conflict := u.Use&UseObject != 0 && s.Type != "object" ||
		u.Use&UseRange != 0 && s.Type != "object" && s.Type != "array"
	switch {
	case depth == 0:
		if u.Use&(UseFree|UseRange) != 0 {
			s.XPreserveUnknownFields = ptr.To(true) // the top level stays a map
		}
	case conflict:
		was := s.Type
		reopen(s)
		return warnf(Opened, ".Values."+u.Dotted(), "uses .Values.%s as a %s, which values.yaml makes %s: the CRD accepts any value there",
			u.Dotted(), useName(u.Use), article(was))
	case u.Use&UseFree != 0:
		openBelow(s)
	case u.Use&UseRange != 0 && s.Type == "object":
		s.XPreserveUnknownFields = ptr.To(true)
	}
	widenScalar(s, u.Use)
	return Warning{}
}

// anyKey keeps the unknown fields of a map whose keys templates written
// in the values (tpl) may read.
func anyKey(s *apiextensionsv1.JSONSchemaProps, u *PathUse) Warning {
	if u.Use&UseAnyKey == 0 || s.Type != "object" || preserves(s) {
		return Warning{}
	}
	s.XPreserveUnknownFields = ptr.To(true)
	where := "spec"
	if len(u.Path) > 1 {
		where = ".Values." + dotted(u.Path[:len(u.Path)-1])
	}
	return warnf(TplKeys, where, "renders values with tpl, whose templates may read values of any name: the CRD keeps fields values.yaml does not declare in %s", where)
}

// widenScalar widens a scalar's type to what the fields it lands in and
// the defaults templates give it accept besides its default's type.
func widenScalar(s *apiextensionsv1.JSONSchemaProps, use Use) {
	switch {
	case s.Type != "string" && s.Type != "integer" && s.Type != "number":
		return
	case use&UseQuantity != 0:
		// A quantity is read from a string (100m, 1Gi) or a number (0.5).
		reopen(s)
	case use&UseIntOrString != 0,
		use&UsePort != 0 && s.Type == "string", // a port's name: a field that takes numbers too
		use&UseNumberDefault != 0 && s.Type == "string",
		use&UseStringDefault != 0 && s.Type != "string":
		if s.Type == "number" {
			reopen(s) // int-or-string refuses fractions
			return
		}
		intOrString(s)
	case s.Type == "string" && use&UseRead != 0 && use&^(UseRead|UseStringDefault) == 0:
		// Only ever printed as text (in a longer string, or formatted): an
		// integer a user writes prints as well, and Helm renders it.
		intOrString(s)
	}
}

// intOrString makes s accept an integer or a string, keeping its description.
func intOrString(s *apiextensionsv1.JSONSchemaProps) {
	*s = apiextensionsv1.JSONSchemaProps{Description: s.Description, XIntOrString: true, Nullable: s.Nullable}
}

// article is "a string", "an integer"...
func article(typ string) string {
	if typ == "" {
		return "any value"
	}
	if strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

func useName(u Use) string {
	if u&UseObject == 0 {
		return "list or map (range)"
	}
	return "map"
}

// keepUnknownKeys makes every map of s, s included, keep the fields it does
// not declare; types stay as they are.
func keepUnknownKeys(s *apiextensionsv1.JSONSchemaProps) {
	if s.Type != "object" {
		return
	}
	s.XPreserveUnknownFields = ptr.To(true)
	for k, p := range s.Properties {
		keepUnknownKeys(&p)
		s.Properties[k] = p
	}
}

// openBelow makes what a free-form value holds accept anything, keeping
// the structure values.yaml shows as documentation: maps keep unknown
// fields, list items and scalars below the top are any value. A scalar at
// the top keeps its type, which its non-empty default proves.
func openBelow(s *apiextensionsv1.JSONSchemaProps) {
	switch s.Type {
	case "object":
		s.XPreserveUnknownFields = ptr.To(true)
		for k, p := range s.Properties {
			if p.Type == "object" {
				openBelow(&p)
			} else {
				reopen(&p)
			}
			s.Properties[k] = p
		}
	case "array":
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: anyValue()}
	}
}
