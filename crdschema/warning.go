package crdschema

import "fmt"

// Warning is one place where the CRD accepts more than values.yaml shows,
// or cannot hold what values.schema.json says.
type Warning struct {
	Kind WarningKind
	// At is the place: a values path (.Values.image.tag) or a
	// values.schema.json pointer (#/properties/image).
	At string
	// Text is the whole warning, naming the chart and the files.
	Text string
}

func (w Warning) String() string { return w.Text }

// WarningKind is what a warning says, for warnings read by kind: a large
// chart has a hundred of one kind.
type WarningKind int

const (
	// Undeclared: the chart reads a value its values.yaml does not declare.
	Undeclared WarningKind = iota + 1
	// Opened: the chart uses a value otherwise than values.yaml's default
	// types it, or the values given do.
	Opened
	// TplKeys: values rendered with tpl may read keys values.yaml does not
	// declare.
	TplKeys
	// SchemaLimit: values.schema.json says what a CRD cannot hold.
	SchemaLimit
)

// Summary says what the warnings of kind k have in common.
func (k WarningKind) Summary() string {
	switch k {
	case Undeclared:
		return "values the chart reads that values.yaml does not declare: the CRD accepts any value there"
	case Opened:
		return "values used otherwise than values.yaml's default types them: the CRD accepts any value there"
	case TplKeys:
		return "maps whose keys values rendered with tpl may read: the CRD keeps the fields values.yaml does not declare"
	case SchemaLimit:
		return "values.schema.json rules a CRD cannot hold: the CRD accepts more there, and Helm still validates them"
	}
	return fmt.Sprintf("warnings of kind %d", int(k))
}

// Fix says what the chart's author can do about warnings of kind k.
func (k WarningKind) Fix() string {
	switch k {
	case Undeclared:
		return "declare each in values.yaml, with a default of its type and a comment, to type it in the CRD"
	case Opened:
		return "give each a default of the type the templates use in values.yaml"
	case TplKeys:
		return "declare the keys in values.yaml to type them"
	case SchemaLimit:
		return "nothing is needed: Helm validates every render against values.schema.json"
	}
	return ""
}

// warnf is a warning of kind at place at.
func warnf(kind WarningKind, at, format string, args ...any) Warning {
	return Warning{Kind: kind, At: at, Text: fmt.Sprintf(format, args...)}
}

// prefixed is w with prefix before its text.
func (w Warning) prefixed(prefix string) Warning {
	w.Text = prefix + w.Text
	return w
}
