package rbac

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"text/template/parse"

	"github.com/chartpilot/chartpilot/chart"

	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// This file reads a chart's templates (their parse trees, not their output)
// for the values that decide which documents they render: the gates the
// derivation varies to find every kind a chart may create.

// testOp is how a condition tests a value.
type testOp string

const (
	opTruthy testOp = ""   // if/with/range .Values.x, and, or, not, empty
	opEq     testOp = "eq" // eq .Values.x "y"
	opNe     testOp = "ne"
	opGt     testOp = "gt" // gt (.Values.x | int) 1
	opGe     testOp = "ge"
	opLt     testOp = "lt"
	opLe     testOp = "le"
	opHas    testOp = "has" // has "y" .Values.x
)

// shape is how a truthy test uses its value, which says what a value that
// passes the test should look like.
type shape int

const (
	shapeAny   shape = iota // if: anything non-empty
	shapeMap                // with: fields are read from it
	shapeRange              // range: it is iterated
)

// atom is one test of one value in a condition that decides what a template
// renders.
type atom struct {
	// Path is the value's dotted path from the top chart's values.
	Path string
	Op   testOp
	// Lit is the literal compared with (string, int64, float64 or bool).
	Lit any
	// Negated is true under `not` (or `empty`): the branch is taken when
	// the test fails.
	Negated bool
	Shape   shape
	// Else is true when the branch has an else: the test failing renders
	// something too.
	Else bool
	// KindLine is true for a test that picks what an apiVersion or kind
	// line writes: a value it prints there is the chart user's apiVersion,
	// which no made-up value stands for.
	KindLine bool
}

// String names the condition under which the branch is taken, e.g.
// "autoscaling.enabled", "!rbac.create", "replicaCount>1", "mode=batch".
func (a atom) String() string {
	not := ""
	if a.Negated {
		not = "!"
	}
	switch a.Op {
	case opTruthy:
		return not + a.Path
	case opEq:
		if a.Negated {
			return fmt.Sprintf("%s!=%v", a.Path, a.Lit)
		}
		return fmt.Sprintf("%s=%v", a.Path, a.Lit)
	case opNe:
		if a.Negated {
			return fmt.Sprintf("%s=%v", a.Path, a.Lit)
		}
		return fmt.Sprintf("%s!=%v", a.Path, a.Lit)
	case opHas:
		return fmt.Sprintf("%s%s has %v", not, a.Path, a.Lit)
	}
	sym := map[testOp]string{opGt: ">", opGe: ">=", opLt: "<", opLe: "<="}[a.Op]
	return fmt.Sprintf("%s%s%s%v", not, a.Path, sym, a.Lit)
}

// templateGates are the conditions that decide what one template renders.
type templateGates struct {
	// Source is the template's path as Helm names its output.
	Source string
	// Atoms are the tests of values in those conditions, including the
	// conditions of the subcharts the template belongs to.
	Atoms []atom
	// Probes are the API versions those conditions test with
	// .Capabilities.APIVersions.Has, e.g. "monitoring.coreos.com/v1".
	Probes []string
	// Capabilities is true when a condition tests .Capabilities (the API
	// set or the Kubernetes version).
	Capabilities bool
}

// guard is the condition around a point of a template: its tests, and
// whether the point is in the else branch (the condition failed).
type guard struct {
	Atoms []atom
	Else  bool
}

// failCall is a `fail` in a template and the conditions around it: a render
// that fails there needs values that leave one of them.
type failCall struct {
	Location string
	Guards   []guard
}

// requiredCall is a `required "message" .Values.x` in a template.
type requiredCall struct {
	Path, Message string
	// Locations are where Helm reports a failed call: the call's and its
	// argument's file:line:col.
	Locations []string
}

// chartGates is what reading every template of a chart tells.
type chartGates struct {
	// Templates are the rendered templates (not helpers), by Source.
	Templates map[string]*templateGates
	// Required are the `required` calls with a literal message.
	Required []requiredCall
	// Fails are the `fail` calls under conditions.
	Fails []failCall
	// Printed are the values a template prints as text: a value passing a
	// truthy test is then a string, not true.
	Printed map[string]bool
	// Ranged are the values a template iterates over; Mapped those it
	// reads as maps (keys, hasKey, get...); Templated those it gives tpl.
	Ranged, Mapped, Templated map[string]bool
	// Passthrough are the values whose elements a template renders as
	// whole documents (extraObjects), by the template.
	Passthrough map[string]string
	// Refs are every value path the templates read: what a value turned on
	// must hold for the templates that read its fields.
	Refs map[string]bool
	// Probes are every API any template tests for with
	// .Capabilities.APIVersions.Has.
	Probes map[string]bool
	// Schemas are the charts' values.schema.json.
	Schemas valueSchemas
	// ParseErrors are templates Go's parser refuses (Helm refuses them too).
	ParseErrors []string
}

// analyzeGates reads the templates of ch and its subcharts.
func analyzeGates(ch *helmchart.Chart) *chartGates {
	a := &chartGates{Templates: map[string]*templateGates{}, Printed: map[string]bool{}, Ranged: map[string]bool{}, Mapped: map[string]bool{}, Templated: map[string]bool{}, Passthrough: map[string]string{}, Probes: map[string]bool{}, Refs: map[string]bool{}, Schemas: loadValueSchemas(ch)}
	trees := map[string]*parse.Tree{}
	var files []templateFile
	collectTemplates(ch, ch.Name(), nil, nil, &files)
	for _, f := range files {
		t := parse.New(f.name)
		t.Mode = parse.SkipFuncCheck
		if _, err := t.Parse(f.text, "", "", trees); err != nil {
			a.ParseErrors = append(a.ParseErrors, f.name)
		}
	}
	for _, f := range files {
		base := path.Base(f.name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || !strings.Contains(f.name, "/templates/") {
			continue
		}
		tree := trees[f.name]
		if tree == nil || tree.Root == nil {
			continue
		}
		tg := &templateGates{Source: f.name}
		tg.Atoms = append(tg.Atoms, f.inherited...)
		w := &gateWalker{a: a, tg: tg, trees: trees, prefix: f.prefix, visiting: map[string]bool{}, walked: map[string]bool{}}
		w.list(tree, tree.Root, scope{dot: rootCtx(), vars: map[string]valueCtx{"$": rootCtx()}})
		tg.Atoms = uniqueAtoms(tg.Atoms)
		sort.Strings(tg.Probes)
		tg.Probes = compactStrings(tg.Probes)
		a.Templates[f.name] = tg
	}
	a.Required = uniqueBy(a.Required, func(r requiredCall) string { return strings.Join(r.Locations, ",") + r.Path })
	a.Fails = uniqueBy(a.Fails, func(f failCall) string { return f.Location + fmt.Sprint(f.Guards) })
	return a
}

func uniqueBy[T any](list []T, key func(T) string) []T {
	seen := map[string]bool{}
	var out []T
	for _, v := range list {
		if k := key(v); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// expand replaces the elements of maps in the templates' tests (x.*.enabled,
// from `range .Values.x`) by the keys the values hold there; tests of
// elements of lists, or of maps the values leave empty, are dropped.
func (g *chartGates) expand(vals map[string]any) {
	for _, tg := range g.Templates {
		var out []atom
		for _, a := range tg.Atoms {
			for _, p := range expandPath(a.Path, vals) {
				b := a
				b.Path = p
				out = append(out, b)
			}
		}
		tg.Atoms = uniqueAtoms(out)
	}
	for p := range g.Refs {
		if strings.Contains(p, "*") {
			// Kept too: the shape of the elements of what a gate turns on.
			for _, e := range expandPath(p, vals) {
				g.Refs[e] = true
			}
		}
	}
}

// expandPath is the concrete paths a path with "*" keys stands for.
func expandPath(p string, vals map[string]any) []string {
	before, after, found := strings.Cut(p, ".*")
	if !found {
		return []string{p}
	}
	m, ok := lookupValue(vals, before)
	mm, isMap := m.(map[string]any)
	if !ok || !isMap {
		return nil
	}
	var out []string
	for _, k := range sortedKeys(mapKeys(mm)) {
		out = append(out, expandPath(before+"."+k+after, vals)...)
	}
	return out
}

func mapKeys(m map[string]any) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// tested says whether a condition of some template tests the value at path.
func (g *chartGates) tested(path string) bool {
	for _, tg := range g.Templates {
		for _, a := range tg.Atoms {
			if a.Path == path {
				return true
			}
		}
	}
	return false
}

// templateFile is one template file of the chart tree.
type templateFile struct {
	name, text string
	// prefix is where its chart's values sit in the top chart's values.
	prefix []string
	// inherited are the conditions of the subcharts it belongs to.
	inherited []atom
}

func collectTemplates(ch *helmchart.Chart, dir string, prefix []string, inherited []atom, out *[]templateFile) {
	for _, t := range ch.Templates {
		*out = append(*out, templateFile{name: dir + "/" + t.Name, text: string(t.Data), prefix: prefix, inherited: inherited})
	}
	for _, sub := range chart.Subcharts(ch) {
		inh := append([]atom(nil), inherited...)
		for _, c := range strings.Split(sub.Condition, ",") {
			if c = strings.TrimSpace(c); c != "" {
				inh = append(inh, atom{Path: joinPath(prefix, strings.Split(c, "."))})
			}
		}
		collectTemplates(sub.Chart, dir+"/charts/"+sub.Key, append(append([]string(nil), prefix...), sub.Key), inh, out)
	}
}

// joinPath is the top-level path of a value of the chart at prefix; its
// globals are the top chart's.
func joinPath(prefix, keys []string) string {
	if len(keys) > 0 && keys[0] == "global" {
		return strings.Join(keys, ".")
	}
	return strings.Join(append(append([]string(nil), prefix...), keys...), ".")
}

// valueCtx is what `.` (or a variable) holds: the root context, a value,
// or something the reader cannot follow.
type valueCtx struct {
	root bool
	// path is the value's keys, when not root; nil: unknown.
	path []string
}

func rootCtx() valueCtx { return valueCtx{root: true} }

func (c valueCtx) known() bool { return c.root || c.path != nil }

// scope is what the walker knows at a point of a template.
type scope struct {
	dot  valueCtx
	vars map[string]valueCtx
	// all is true where every condition decides what is rendered: in a
	// helper that picks an apiVersion or a kind, in a Role's rules.
	all bool
}

func (s scope) withDot(dot valueCtx) scope {
	vars := make(map[string]valueCtx, len(s.vars))
	for k, v := range s.vars {
		vars[k] = v
	}
	return scope{dot: dot, vars: vars, all: s.all}
}

var (
	// docMarker is a line that starts a document or names its kind.
	docMarker = regexp.MustCompile(`(?m)^(---|apiVersion:|kind:)`)
	// kindOrAPIPrefix is a line's text before an action that writes the
	// line's apiVersion or kind.
	kindOrAPIPrefix = regexp.MustCompile(`^\s*(apiVersion|kind):\s*["']?$`)
	docKind         = regexp.MustCompile(`(?m)^(?:(---)|kind:\s*["']?([A-Za-z0-9]+)|(rules):)`)
)

// gateWalker walks one template's tree, and the helpers it includes.
type gateWalker struct {
	a        *chartGates
	tg       *templateGates
	trees    map[string]*parse.Tree
	prefix   []string
	visiting map[string]bool
	// line is the text of the current line so far; kind the kind of the
	// current document.
	line, kind string
	// rules is true past the rules: line of the current document.
	rules bool
	// guards are the conditions around the current point.
	guards []guard
	// kindLine counts the actions on an apiVersion or kind line being
	// walked (through the helpers they include).
	kindLine int
	// walked are the helpers already read outside a gating position, by
	// name and context: their effects do not change on a second reading.
	walked map[string]bool
}

func (w *gateWalker) list(t *parse.Tree, l *parse.ListNode, s scope) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(t, n, s)
	}
}

func (w *gateWalker) node(t *parse.Tree, n parse.Node, s scope) {
	switch n := n.(type) {
	case *parse.TextNode:
		w.text(string(n.Text))
	case *parse.ActionNode:
		onKindLine := kindOrAPIPrefix.MatchString(w.line)
		// In a Role's rules, an action that writes whole lines (an include
		// of rules) decides rules; one within a line writes a name.
		rulesLines := w.inRole() && strings.TrimSpace(w.line) == ""
		n0 := len(w.tg.Atoms)
		if onKindLine {
			w.kindLine++
		}
		w.pipeUses(t, n.Pipe, s, s.all || onKindLine || rulesLines)
		if onKindLine {
			w.kindLine--
		}
		w.markKindLine(n0)
		w.declare(n.Pipe, s)
		w.line += "x" // the action's output
	case *parse.IfNode:
		w.branch(t, &n.BranchNode, s, shapeAny)
	case *parse.WithNode:
		w.branch(t, &n.BranchNode, s, shapeMap)
	case *parse.RangeNode:
		w.branch(t, &n.BranchNode, s, shapeRange)
	case *parse.TemplateNode:
		onKindLine := kindOrAPIPrefix.MatchString(w.line)
		relevant := s.all || onKindLine || (w.inRole() && strings.TrimSpace(w.line) == "")
		n0 := len(w.tg.Atoms)
		if onKindLine {
			w.kindLine++
		}
		w.include(n.Name, w.argCtx(n.Pipe, s), relevant)
		if onKindLine {
			w.kindLine--
		}
		w.markKindLine(n0)
		w.line += "x"
	case *parse.ListNode:
		w.list(t, n, s)
	}
}

// text follows the current line and the kind of the current document.
func (w *gateWalker) text(text string) {
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		w.line = text[i+1:]
	} else {
		w.line += text
	}
	for _, m := range docKind.FindAllStringSubmatch(text, -1) {
		switch {
		case m[1] != "":
			w.kind, w.rules = "", false
		case m[2] != "":
			w.kind = m[2]
		default:
			w.rules = true
		}
	}
}

// inRole is true in the rules of a Role or ClusterRole, which the operator
// must hold: conditions there matter as much as those around documents.
func (w *gateWalker) inRole() bool { return w.rules && (w.kind == "Role" || w.kind == "ClusterRole") }

// branch reads an if, with or range: its condition gates what the template
// renders when its branches hold documents (or write an apiVersion or
// kind, or a Role's rules).
func (w *gateWalker) branch(t *parse.Tree, b *parse.BranchNode, s scope, sh shape) {
	relevant := s.all || kindOrAPIPrefix.MatchString(w.line) || w.inRole() || holdsDocuments(b.List) || holdsDocuments(b.ElseList)
	// The condition's tests are read either way, as the guard of what the
	// branches hold (a fail); they gate what is rendered when relevant.
	nAtoms, nProbes, caps := len(w.tg.Atoms), len(w.tg.Probes), w.tg.Capabilities
	w.condition(t, b.Pipe, s, sh)
	w.markKindLine(nAtoms)
	cond := append([]atom(nil), w.tg.Atoms[nAtoms:]...)
	if relevant {
		for i := nAtoms; i < len(w.tg.Atoms); i++ {
			w.tg.Atoms[i].Else = b.ElseList != nil
		}
	} else {
		w.tg.Atoms, w.tg.Probes, w.tg.Capabilities = w.tg.Atoms[:nAtoms], w.tg.Probes[:nProbes], caps
	}
	inner := s.withDot(s.dot)
	switch sh {
	case shapeMap:
		inner = s.withDot(w.pipeCtx(b.Pipe, s))
		w.declare(b.Pipe, inner)
	case shapeRange:
		// The elements of a map or list at P are P.* (a map's keys are
		// known from the values when gates are planned).
		elem := valueCtx{}
		if ctx := w.pipeCtx(b.Pipe, s); ctx.path != nil {
			w.a.Ranged[strings.Join(ctx.path, ".")] = true
			if relevant && startsDocumentsOnly(b.List) {
				w.a.Passthrough[strings.Join(ctx.path, ".")] = w.tg.Source
			}
			elem = valueCtx{path: append(append([]string(nil), ctx.path...), "*")}
		}
		inner = s.withDot(elem)
		if b.Pipe != nil && len(b.Pipe.Decl) > 0 {
			last := b.Pipe.Decl[len(b.Pipe.Decl)-1].Ident[0]
			inner.vars[last] = elem
			if len(b.Pipe.Decl) == 2 {
				inner.vars[b.Pipe.Decl[0].Ident[0]] = valueCtx{}
			}
		}
	default:
		w.declare(b.Pipe, inner)
	}
	w.guards = append(w.guards, guard{Atoms: cond})
	w.list(t, b.List, inner)
	w.guards[len(w.guards)-1].Else = true
	w.list(t, b.ElseList, s)
	w.guards = w.guards[:len(w.guards)-1]
}

// startsDocumentsOnly is true when a branch's text starts documents but
// names no apiVersion or kind: what it renders comes from elsewhere.
func startsDocumentsOnly(l *parse.ListNode) bool {
	if l == nil {
		return false
	}
	sep, kind := false, false
	for _, n := range l.Nodes {
		if t, ok := n.(*parse.TextNode); ok {
			for _, m := range docMarker.FindAllSubmatch(t.Text, -1) {
				if string(m[1]) == "---" {
					sep = true
				} else {
					kind = true
				}
			}
		}
	}
	return sep && !kind
}

// markKindLine marks the atoms from n on as picking an apiVersion or kind,
// when the walk is on such a line.
func (w *gateWalker) markKindLine(n int) {
	if w.kindLine == 0 && !kindOrAPIPrefix.MatchString(w.line) {
		return
	}
	for i := n; i < len(w.tg.Atoms); i++ {
		w.tg.Atoms[i].KindLine = true
	}
}

// holdsDocuments is true when a branch's own text starts documents or
// names an apiVersion or kind.
func holdsDocuments(l *parse.ListNode) bool {
	if l == nil {
		return false
	}
	found := false
	var visit func(n parse.Node)
	visit = func(n parse.Node) {
		if found {
			return
		}
		switch n := n.(type) {
		case *parse.TextNode:
			found = docMarker.Match(n.Text)
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				visit(c)
			}
		case *parse.IfNode:
			visit(n.List)
			visit(n.ElseList)
		case *parse.WithNode:
			visit(n.List)
			visit(n.ElseList)
		case *parse.RangeNode:
			visit(n.List)
			visit(n.ElseList)
		}
	}
	visit(l)
	return found
}

// condition records the tests of an if, with or range that gates output.
func (w *gateWalker) condition(t *parse.Tree, p *parse.PipeNode, s scope, sh shape) {
	if p == nil {
		return
	}
	if len(p.Cmds) == 1 && len(p.Cmds[0].Args) == 1 {
		// with .Values.x, range .Values.x: the shape of x matters.
		if path, ok := w.valuePath(p.Cmds[0].Args[0], s); ok {
			w.tg.Atoms = append(w.tg.Atoms, atom{Path: path, Shape: sh})
			return
		}
	}
	w.test(t, p, s, false)
}

// test reads a node of a condition; negated is true under `not`.
func (w *gateWalker) test(t *parse.Tree, n parse.Node, s scope, negated bool) {
	switch n := n.(type) {
	case *parse.PipeNode:
		if n == nil || len(n.Cmds) == 0 {
			return
		}
		// In `x | f | g` the test is of x, transformed; later commands'
		// extra arguments are read for their uses.
		w.testCommand(t, n.Cmds[0], s, negated)
		for _, c := range n.Cmds[1:] {
			for _, a := range c.Args[1:] {
				w.uses(t, a, s, true)
			}
		}
	case *parse.CommandNode:
		w.testCommand(t, n, s, negated)
	default:
		if path, ok := w.valuePath(n, s); ok {
			w.tg.Atoms = append(w.tg.Atoms, atom{Path: path, Negated: negated})
			return
		}
		w.uses(t, n, s, true)
	}
}

func (w *gateWalker) testCommand(t *parse.Tree, c *parse.CommandNode, s scope, negated bool) {
	if len(c.Args) == 0 {
		return
	}
	fn, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		if len(c.Args) == 1 {
			w.test(t, c.Args[0], s, negated)
			return
		}
		// A method call: .Capabilities.APIVersions.Has "x".
		w.uses(t, c, s, true)
		return
	}
	args := c.Args[1:]
	switch fn.Ident {
	case "and", "or":
		for _, a := range args {
			w.test(t, a, s, negated)
		}
	case "not", "empty":
		for _, a := range args {
			w.test(t, a, s, !negated)
		}
	case "eq", "ne", "gt", "ge", "lt", "le":
		w.comparison(t, testOp(fn.Ident), args, s, negated)
	case "has":
		if len(args) == 2 {
			lit, litOK := literal(args[0])
			path, pathOK := w.valuePath(args[1], s)
			if litOK && pathOK {
				w.tg.Atoms = append(w.tg.Atoms, atom{Path: path, Op: opHas, Lit: lit, Negated: negated})
				return
			}
		}
		w.uses(t, c, s, true)
	default:
		// Any other function: its value arguments are tested as they are
		// (default, coalesce, hasKey...), its includes followed.
		w.uses(t, c, s, true)
	}
}

// comparison reads `op A B`: a value compared with a literal.
func (w *gateWalker) comparison(t *parse.Tree, op testOp, args []parse.Node, s scope, negated bool) {
	if len(args) >= 2 {
		path, pathOK := w.valuePath(unwrap(args[0]), s)
		lits := args[1:]
		if !pathOK && len(args) == 2 {
			// `op LIT x` reads the other way round.
			path, pathOK = w.valuePath(unwrap(args[1]), s)
			lits = args[:1]
			op = flip(op)
		}
		if pathOK {
			found := false
			for _, l := range lits {
				if lit, ok := literal(l); ok {
					w.tg.Atoms = append(w.tg.Atoms, atom{Path: path, Op: op, Lit: lit, Negated: negated})
					found = true
				}
			}
			if found {
				return
			}
		}
	}
	for _, a := range args {
		w.uses(t, a, s, true)
	}
}

// flip is op with its operands swapped: `gt 1 x` is `lt x 1`.
func flip(op testOp) testOp {
	switch op {
	case opGt:
		return opLt
	case opGe:
		return opLe
	case opLt:
		return opGt
	case opLe:
		return opGe
	}
	return op
}

// unwrap is the value a conversion pipeline starts from: `(x | int)`,
// `(int x)`, `(toString x)`.
func unwrap(n parse.Node) parse.Node {
	p, ok := n.(*parse.PipeNode)
	if !ok || len(p.Cmds) == 0 {
		return n
	}
	first := p.Cmds[0]
	if len(first.Args) == 1 {
		return unwrap(first.Args[0])
	}
	if fn, ok := first.Args[0].(*parse.IdentifierNode); ok && len(first.Args) == 2 && conversions[fn.Ident] {
		return unwrap(first.Args[1])
	}
	return n
}

// conversions are functions that convert a value without changing what it
// is compared as.
var conversions = map[string]bool{"int": true, "int64": true, "float64": true, "toString": true, "lower": true, "upper": true, "trim": true, "toDecimal": true, "atoi": true}

// literal is a literal's value.
func literal(n parse.Node) (any, bool) {
	switch n := n.(type) {
	case *parse.StringNode:
		return n.Text, true
	case *parse.BoolNode:
		return n.True, true
	case *parse.NumberNode:
		if n.IsInt {
			return n.Int64, true
		}
		if n.IsFloat {
			return n.Float64, true
		}
	}
	return nil, false
}

// pipeUses reads a pipeline that is not a gating condition: the `required`
// calls, the values printed, and (when relevant) the conditions inside the
// helpers it includes.
func (w *gateWalker) pipeUses(t *parse.Tree, p *parse.PipeNode, s scope, relevant bool) {
	if p == nil {
		return
	}
	if len(p.Decl) == 0 && len(p.Cmds) > 0 && len(p.Cmds[0].Args) == 1 {
		// {{ .Values.x }}, {{ .Values.x | quote }}: x is printed.
		if path, ok := w.valuePath(p.Cmds[0].Args[0], s); ok {
			w.a.Printed[path] = true
		}
	}
	for _, c := range p.Cmds {
		w.uses(t, c, s, relevant)
	}
}

// uses reads a node outside a test: required calls, capability probes,
// includes. With relevant set, the conditions of the helpers it includes
// gate what the template renders.
func (w *gateWalker) uses(t *parse.Tree, n parse.Node, s scope, relevant bool) {
	switch n := n.(type) {
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			w.uses(t, c, s, relevant)
		}
	case *parse.CommandNode:
		w.command(t, n, s, relevant)
	case *parse.FieldNode:
		w.valuePath(n, s)
		w.capability(n.Ident, relevant)
	case *parse.VariableNode:
		w.valuePath(n, s)
		w.capability(n.Ident, relevant)
	case *parse.DotNode:
		w.valuePath(n, s)
	case *parse.ChainNode:
		w.uses(t, n.Node, s, relevant)
	}
}

func (w *gateWalker) command(t *parse.Tree, c *parse.CommandNode, s scope, relevant bool) {
	if len(c.Args) == 0 {
		return
	}
	var probe []string
	switch a := c.Args[0].(type) {
	case *parse.FieldNode:
		probe = a.Ident
	case *parse.VariableNode:
		probe = a.Ident
	}
	if len(c.Args) == 2 && isHasProbe(probe) {
		if lit, ok := c.Args[1].(*parse.StringNode); ok {
			w.a.Probes[lit.Text] = true
			if relevant {
				w.tg.Probes = append(w.tg.Probes, lit.Text)
				w.tg.Capabilities = true
			}
		}
		return
	}
	if fn, ok := c.Args[0].(*parse.IdentifierNode); ok {
		if mapFuncs[fn.Ident] && len(c.Args) >= 2 {
			if path, ok := w.valuePath(c.Args[1], s); ok {
				w.a.Mapped[path] = true
			}
		}
		if stringFuncs[fn.Ident] {
			// A value these take is a string, as if printed.
			for _, a := range c.Args[1:] {
				if path, ok := w.valuePath(a, s); ok {
					w.a.Printed[path] = true
				}
			}
		}
		if fn.Ident == "tpl" && len(c.Args) >= 2 {
			if path, ok := w.valuePath(c.Args[1], s); ok {
				w.a.Templated[path] = true
			}
		}
		switch fn.Ident {
		case "required":
			w.required(t, c, s)
		case "fail":
			if len(w.guards) > 0 {
				w.a.Fails = append(w.a.Fails, failCall{Location: location(t, c), Guards: append([]guard(nil), w.guards...)})
			}
		case "ternary":
			// ternary A B TEST: TEST picks the output, both ways.
			if relevant && len(c.Args) == 4 {
				n := len(w.tg.Atoms)
				w.test(t, c.Args[3], s, false)
				for i := n; i < len(w.tg.Atoms); i++ {
					w.tg.Atoms[i].Else = true
				}
				for _, a := range c.Args[1:3] {
					w.uses(t, a, s, relevant)
				}
				return
			}
		case "include", "template":
			if len(c.Args) >= 2 {
				if name, ok := c.Args[1].(*parse.StringNode); ok {
					var arg parse.Node
					if len(c.Args) >= 3 {
						arg = c.Args[2]
					}
					w.include(name.Text, w.nodeCtx(arg, s), relevant)
				}
			}
		}
	}
	for _, a := range c.Args[1:] {
		w.uses(t, a, s, relevant)
	}
}

// stringFuncs are functions that take strings only.
var stringFuncs = map[string]bool{"htpasswd": true, "b64enc": true, "b64dec": true, "quote": true, "squote": true, "trim": true, "upper": true, "lower": true,
	"trimPrefix": true, "trimSuffix": true, "hasPrefix": true, "hasSuffix": true, "replace": true, "trunc": true, "sha256sum": true, "nospace": true, "kebabcase": true, "snakecase": true}

// mapFuncs are the functions whose first argument is a map.
var mapFuncs = map[string]bool{"keys": true, "hasKey": true, "get": true, "pick": true, "omit": true, "values": true, "set": true, "unset": true}

// isHasProbe is .Capabilities.APIVersions.Has (through any context).
func isHasProbe(ident []string) bool {
	n := len(ident)
	return n >= 3 && ident[n-1] == "Has" && ident[n-2] == "APIVersions" && ident[n-3] == "Capabilities"
}

// capability notes a test of .Capabilities (the Kubernetes version).
func (w *gateWalker) capability(ident []string, relevant bool) {
	if !relevant {
		return
	}
	for _, id := range ident {
		if id == "Capabilities" {
			w.tg.Capabilities = true
		}
	}
}

// required records `required "message" .Values.x`.
func (w *gateWalker) required(t *parse.Tree, c *parse.CommandNode, s scope) {
	if len(c.Args) != 3 {
		return
	}
	msg, ok := c.Args[1].(*parse.StringNode)
	if !ok {
		return
	}
	path, ok := w.valuePath(unwrap(c.Args[2]), s)
	if !ok {
		return
	}
	w.a.Required = append(w.a.Required, requiredCall{Path: path, Message: msg.Text,
		Locations: []string{location(t, c), location(t, c.Args[2])}})
}

// location is where Helm's errors place a node: file:line:col.
func location(t *parse.Tree, n parse.Node) string {
	loc, _ := t.ErrorContext(n)
	return loc
}

// include follows a helper: with relevant set, its conditions gate what
// the template renders (it picks an apiVersion, a kind or a Role's rules, or
// a gating condition tests its output).
func (w *gateWalker) include(name string, ctx valueCtx, relevant bool) {
	tree := w.trees[name]
	if tree == nil || tree.Root == nil || w.visiting[name] || len(w.visiting) > 32 {
		return
	}
	if !relevant {
		// Read once for the documents it starts, its required calls and
		// printed values.
		key := fmt.Sprintf("%s\x00%t\x00%v", name, ctx.root, ctx.path)
		if w.walked[key] {
			return
		}
		w.walked[key] = true
	}
	w.visiting[name] = true
	defer delete(w.visiting, name)
	line, kind, rules, guards := w.line, w.kind, w.rules, w.guards
	w.line, w.kind, w.rules, w.guards = "", "", false, nil
	w.list(tree, tree.Root, scope{dot: ctx, vars: map[string]valueCtx{"$": ctx}, all: relevant})
	w.line, w.kind, w.rules, w.guards = line, kind, rules, guards
}

// argCtx is the context a {{ template "x" ARG }} passes.
func (w *gateWalker) argCtx(p *parse.PipeNode, s scope) valueCtx {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return valueCtx{}
	}
	return w.nodeCtx(p.Cmds[0].Args[0], s)
}

// nodeCtx is what a node passes as a helper's context: the root (`.` at
// the root, `$`), a value, or unknown (a dict).
func (w *gateWalker) nodeCtx(n parse.Node, s scope) valueCtx {
	switch n := n.(type) {
	case *parse.DotNode:
		return s.dot
	case *parse.VariableNode:
		if len(n.Ident) == 1 {
			return s.vars[n.Ident[0]]
		}
	}
	if path, ok := w.valuePath(n, s); ok {
		return valueCtx{path: strings.Split(path, ".")}
	}
	return valueCtx{}
}

// pipeCtx is what `with PIPE` sets `.` to.
func (w *gateWalker) pipeCtx(p *parse.PipeNode, s scope) valueCtx {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return valueCtx{}
	}
	if path, ok := w.valuePath(p.Cmds[0].Args[0], s); ok {
		return valueCtx{path: strings.Split(path, ".")}
	}
	return valueCtx{}
}

// declare follows `$x := .Values.y` so that later tests of $x are of y.
func (w *gateWalker) declare(p *parse.PipeNode, s scope) {
	if p == nil || len(p.Decl) != 1 {
		return
	}
	name := p.Decl[0].Ident[0]
	if len(p.Cmds) == 1 && len(p.Cmds[0].Args) == 1 {
		s.vars[name] = w.nodeCtx(p.Cmds[0].Args[0], s)
		return
	}
	s.vars[name] = valueCtx{}
}

// valuePath is the top-level values path a node reads, if it reads one,
// and notes that the templates read it.
func (w *gateWalker) valuePath(n parse.Node, s scope) (string, bool) {
	p, ok := w.resolve(n, s)
	if ok {
		w.a.Refs[p] = true
	}
	return p, ok
}

func (w *gateWalker) resolve(n parse.Node, s scope) (string, bool) {
	var base valueCtx
	var keys []string
	switch n := n.(type) {
	case *parse.FieldNode:
		base, keys = s.dot, n.Ident
	case *parse.VariableNode:
		base, keys = s.vars[n.Ident[0]], n.Ident[1:]
	case *parse.DotNode:
		base = s.dot
	case *parse.ChainNode:
		// (.Values.x).enabled reads x.enabled, nil-safe.
		if p, ok := n.Node.(*parse.PipeNode); ok && len(p.Cmds) == 1 && len(p.Cmds[0].Args) == 1 {
			if inner, ok := w.resolve(p.Cmds[0].Args[0], s); ok {
				return inner + "." + strings.Join(n.Field, "."), true
			}
		}
		return "", false
	default:
		return "", false
	}
	switch {
	case base.root:
		if len(keys) < 2 || keys[0] != "Values" {
			return "", false
		}
		return joinPath(w.prefix, keys[1:]), true
	case base.path != nil:
		full := append(append([]string(nil), base.path...), keys...)
		if len(full) == 0 {
			return "", false
		}
		// base.path is already a top-level path.
		return strings.Join(full, "."), true
	}
	return "", false
}

func uniqueAtoms(as []atom) []atom {
	seen := map[string]bool{}
	var out []atom
	for _, a := range as {
		k := fmt.Sprintf("%s\x00%s\x00%v\x00%t\x00%d", a.Path, a.Op, a.Lit, a.Negated, a.Shape)
		if !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

func compactStrings(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
