package chart

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"text/template/parse"

	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// ValueError is a render the chart refused itself, through Helm's
// `required` or `fail`: a value it needs is missing or wrong. The user
// fixes it with values, not by changing the chart.
type ValueError struct {
	// Location is where the chart refused, as Helm names it:
	// chart/templates/file.yaml:line:column.
	Location string
	// Message is the chart's own message.
	Message string
	// Path is the values path (from the top chart's values, subcharts'
	// under their keys) the failed `required` checks, e.g. ui.message;
	// empty for `fail` or when the template does not tell.
	Path string
	// Err is Helm's error, which names the template chain.
	Err error
}

func (e *ValueError) Unwrap() error { return e.Err }

func (e *ValueError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("%s: the chart requires .Values.%s: %s", e.Location, e.Path, e.Message)
	}
	return fmt.Sprintf("%s: the chart refused its values: %s", e.Location, e.Message)
}

// execError is the message Helm makes of a required or fail call's error.
var execError = regexp.MustCompile(`execution error at \(([^)]+)\): ((?s).*)$`)

// valueError makes a ValueError of Helm's error when the chart refused its
// values with required or fail; nil for any other error.
func valueError(ch *helmchart.Chart, err error) *ValueError {
	m := execError.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	ve := &ValueError{Location: m[1], Message: strings.TrimSpace(m[2]), Err: err}
	ve.Path = requiredPath(ch, ve.Location)
	return ve
}

// requiredPath finds the `required` call at location (file:line:column,
// the column of the word required) in ch's templates and the values path
// it checks; "" when there is none or its value is not a .Values path.
func requiredPath(ch *helmchart.Chart, location string) string {
	file, line, col, ok := splitLocation(location)
	if !ok {
		return ""
	}
	owner, keys, tmpl := templateOf(ch, file)
	if tmpl == nil {
		return ""
	}
	trees := map[string]*parse.Tree{}
	t := parse.New(file)
	t.Mode = parse.SkipFuncCheck
	if _, err := t.Parse(string(tmpl.Data), "", "", trees); err != nil {
		return ""
	}
	want := fmt.Sprintf("%s:%d:%d", file, line, col)
	for _, tree := range trees {
		var found []string
		walkCommands(tree.Root, func(pipe *parse.PipeNode, i int) {
			cmd := pipe.Cmds[i]
			id, ok := cmd.Args[0].(*parse.IdentifierNode)
			if !ok || id.Ident != "required" || found != nil {
				return
			}
			if loc, _ := tree.ErrorContext(id); loc != want {
				return
			}
			var arg parse.Node
			switch {
			case len(cmd.Args) == 3:
				arg = cmd.Args[2]
			case len(cmd.Args) == 2 && i > 0 && len(pipe.Cmds[i-1].Args) == 1:
				arg = pipe.Cmds[i-1].Args[0] // .Values.x | required "..."
			}
			found = valuesPath(arg)
		})
		if found != nil {
			if owner.Metadata.Type == "library" {
				keys = nil
			}
			return strings.Join(append(keys, found...), ".")
		}
	}
	return ""
}

// splitLocation splits Helm's file:line:column.
func splitLocation(loc string) (file string, line, col int, ok bool) {
	i := strings.LastIndexByte(loc, ':')
	if i < 0 {
		return "", 0, 0, false
	}
	j := strings.LastIndexByte(loc[:i], ':')
	if j < 0 {
		return "", 0, 0, false
	}
	if _, err := fmt.Sscanf(loc[j+1:], "%d:%d", &line, &col); err != nil {
		return "", 0, 0, false
	}
	return loc[:j], line, col, true
}

// templateOf finds the template Helm names file ("top/charts/sub/templates/x.yaml"),
// the chart holding it and the keys of that chart's values from the top
// chart's (its aliases, as Helm names aliased subcharts).
func templateOf(ch *helmchart.Chart, file string) (*helmchart.Chart, []string, *helmcommon.File) {
	rest, ok := strings.CutPrefix(file, ch.Name()+"/")
	if !ok {
		return nil, nil, nil
	}
	cur := ch
	var keys []string
	for {
		sub, after, ok := strings.Cut(strings.TrimPrefix(rest, "charts/"), "/")
		if !strings.HasPrefix(rest, "charts/") || !ok {
			break
		}
		next := subchartByKey(cur, sub)
		if next == nil {
			return nil, nil, nil
		}
		cur, keys, rest = next, append(keys, sub), after
	}
	for _, f := range cur.Templates {
		if path.Clean(f.Name) == rest {
			return cur, keys, f
		}
	}
	return nil, nil, nil
}

// subchartByKey is the dependency of ch whose values sit under key.
func subchartByKey(ch *helmchart.Chart, key string) *helmchart.Chart {
	for _, s := range Subcharts(ch) {
		if s.Key == key {
			return s.Chart
		}
	}
	for _, d := range ch.Dependencies() {
		if d.Name() == key {
			return d
		}
	}
	return nil
}

// walkCommands calls fn with each pipeline and command index below n.
func walkCommands(n parse.Node, fn func(*parse.PipeNode, int)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walkCommands(c, fn)
		}
	case *parse.ActionNode:
		walkCommands(n.Pipe, fn)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for i, c := range n.Cmds {
			if len(c.Args) > 0 {
				fn(n, i)
			}
			for _, a := range c.Args {
				walkCommands(a, fn)
			}
		}
	case *parse.IfNode:
		walkCommands(n.Pipe, fn)
		walkCommands(n.List, fn)
		walkCommands(n.ElseList, fn)
	case *parse.WithNode:
		walkCommands(n.Pipe, fn)
		walkCommands(n.List, fn)
		walkCommands(n.ElseList, fn)
	case *parse.RangeNode:
		walkCommands(n.Pipe, fn)
		walkCommands(n.List, fn)
		walkCommands(n.ElseList, fn)
	case *parse.TemplateNode:
		walkCommands(n.Pipe, fn)
	}
}

// valuesPath is the path of .Values.a.b or $.Values.a.b, nil for anything
// else (the dot elsewhere than the top is not known here).
func valuesPath(n parse.Node) []string {
	var fields []string
	switch n := n.(type) {
	case *parse.FieldNode:
		fields = n.Ident
	case *parse.VariableNode:
		if len(n.Ident) == 0 || n.Ident[0] != "$" {
			return nil
		}
		fields = n.Ident[1:]
	case *parse.PipeNode:
		if len(n.Cmds) == 1 && len(n.Cmds[0].Args) == 1 && len(n.Decl) == 0 {
			return valuesPath(n.Cmds[0].Args[0])
		}
		return nil
	default:
		return nil
	}
	if len(fields) < 2 || fields[0] != "Values" {
		return nil
	}
	return fields[1:]
}
