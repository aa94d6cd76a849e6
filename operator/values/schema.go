package values

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/message"

	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// schemaReport says why vals fail the values.schema.json of ch and of its
// subcharts (each checked against its own values, as Helm checks them),
// one "at '<field>': <rule>" per violation, and never quotes a value: the
// report goes to the CR's status and Events, which more people read than
// the spec, and a value failing a pattern or a format is often a secret
// (a token, a password, a URL with credentials).
//
// Helm's own check (valuesutil.ValidateAgainstSchema) gives the verdict;
// this runs only once it failed, to say where and why.
func schemaReport(ch *chart.Chart, vals map[string]any) string {
	var parts []string
	if len(ch.Schema) > 0 {
		if msg := checkSchema(ch.Schema, vals); msg != "" {
			parts = append(parts, ch.Name()+": "+msg)
		}
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := raw.(map[string]any)
		if !ok {
			parts = append(parts, fmt.Sprintf("%s: values are a %T, not an object", sub.Name(), raw))
			continue
		}
		if msg := schemaReport(sub, subVals); msg != "" {
			parts = append(parts, msg)
		}
	}
	if len(parts) == 0 {
		return ch.Name() + ": the values do not match the schema"
	}
	return strings.Join(parts, "; ")
}

// schemaURL is where a chart's schema sits for the validator, as in Helm.
const schemaURL = "file:///values.schema.json"

// errNotLoaded refuses the schema's references to other documents: a
// report does not read files or the network (Helm's verdict did).
var errNotLoaded = errors.New("not loaded for the report")

type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, fmt.Errorf("%s: %w", url, errNotLoaded) }

// checkSchema returns the violations of one schema by vals, redacted, or
// a generic line when the schema cannot be compiled here; "" when vals
// match it.
func checkSchema(schemaJSON []byte, vals map[string]any) (report string) {
	const unreadable = "the values do not match the schema"
	defer func() {
		if recover() != nil {
			report = unreadable
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return unreadable
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return unreadable
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return unreadable
	}
	var verr *jsonschema.ValidationError
	if err := sch.Validate(vals); !errors.As(err, &verr) {
		return ""
	}
	redact(verr)
	// The top error only says which schema failed; its causes say where.
	causes := make([]string, 0, len(verr.Causes))
	for _, cause := range verr.Causes {
		causes = append(causes, oneLine(cause.Error()))
	}
	return strings.Join(causes, "; ")
}

// redact replaces, in e and its causes, each error kind whose message
// quotes the value checked by one that names the rule only.
func redact(e *jsonschema.ValidationError) {
	if r := redacted(e.ErrorKind); r != nil {
		e.ErrorKind = r
	}
	for _, cause := range e.Causes {
		redact(cause)
	}
}

// redacted is k's message without the value, or nil when k's message has
// none (the library's own kinds quote the value in these only).
func redacted(k jsonschema.ErrorKind) *rule {
	switch k := k.(type) {
	case *kind.Pattern:
		return &rule{k, fmt.Sprintf("does not match pattern %q", k.Want)}
	case *kind.Format:
		return &rule{k, fmt.Sprintf("is not a valid %s", k.Want)}
	case *kind.Minimum:
		return &rule{k, "minimum: want at least " + number(k.Want)}
	case *kind.Maximum:
		return &rule{k, "maximum: want at most " + number(k.Want)}
	case *kind.ExclusiveMinimum:
		return &rule{k, "exclusiveMinimum: want more than " + number(k.Want)}
	case *kind.ExclusiveMaximum:
		return &rule{k, "exclusiveMaximum: want less than " + number(k.Want)}
	case *kind.MultipleOf:
		return &rule{k, "multipleOf: want a multiple of " + number(k.Want)}
	}
	return nil
}

func number(r *big.Rat) string {
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// rule is an error kind whose message names the rule broken, not the value.
type rule struct {
	kind jsonschema.ErrorKind
	msg  string
}

func (r *rule) KeywordPath() []string                   { return r.kind.KeywordPath() }
func (r *rule) LocalizedString(*message.Printer) string { return r.msg }
