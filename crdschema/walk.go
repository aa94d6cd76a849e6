package crdschema

import "text/template/parse"

// ref is what a template expression evaluates to, as far as values go: the
// top-level context (.Values is below it), values paths it may be (one per
// alternative, e.g. `default .Values.a .Values.b`), or a constant.
type ref struct {
	root  bool
	paths [][]string
	// shown are values paths the expression prints formatted (quote,
	// toString...): where the text lands, they land.
	shown [][]string
	// lit is a string or number constant (for index and dig keys).
	lit          string
	isLit, isNum bool
}

// union is a value that may be r or o.
func (r ref) union(o ref) ref {
	return ref{root: r.root || o.root, paths: append(append([][]string(nil), r.paths...), o.paths...),
		shown: append(append([][]string(nil), r.shown...), o.shown...)}
}

// landing are the paths whose value the expression prints, as is or formatted.
func (r ref) landing() ref {
	return ref{paths: append(append([][]string(nil), r.paths...), r.shown...)}
}

// child is r's field name (or Elem).
func (r ref) child(name string) ref {
	out := ref{}
	for _, p := range r.paths {
		out.paths = append(out.paths, append(append([]string(nil), p...), name))
	}
	return out
}

// scope is the dot and the variables at a point of a template.
type scope struct {
	parent *scope
	dot    ref
	vars   map[string]ref
}

func newScope() *scope {
	return &scope{dot: ref{root: true}, vars: map[string]ref{"$": {root: true}}}
}

// child is the scope of a block (if, with, range), with dot rebound.
func (s *scope) child(dot ref) *scope {
	return &scope{parent: s, dot: dot, vars: map[string]ref{}}
}

func (s *scope) lookup(name string) ref {
	for c := s; c != nil; c = c.parent {
		if r, ok := c.vars[name]; ok {
			return r
		}
	}
	return ref{}
}

// assign (`$x = ...`) widens the variable where it was declared: after the
// block it may hold either value.
func (s *scope) assign(name string, r ref) {
	for c := s; c != nil; c = c.parent {
		if old, ok := c.vars[name]; ok {
			c.vars[name] = old.union(r)
			return
		}
	}
	s.vars[name] = r
}

// walker collects the values paths of one parsed template.
type walker struct {
	file  string
	usage Usage
	// out is the template's text so far (its last lines), actions' output
	// written as "X": it tells where an action's output lands.
	out output
}

func (w *walker) mark(r ref, use Use) {
	for _, p := range r.paths {
		w.usage.add(p, use, w.file)
	}
}

func (w *walker) list(l *parse.ListNode, s *scope) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(n, s)
	}
}

func (w *walker) node(n parse.Node, s *scope) {
	switch n := n.(type) {
	case *parse.TextNode:
		w.out.write(string(n.Text))
	case *parse.ActionNode:
		r := w.pipe(n.Pipe, s, true)
		w.mark(r, UseRead)
		if len(n.Pipe.Decl) == 0 {
			key, parent := w.out.field()
			if use := landingUse(key, parent); use != 0 {
				w.mark(r.landing(), use)
			}
			if key != "" {
				w.mark(ref{root: r.root, paths: r.paths}, UseBare)
			}
			w.out.write("X")
		}
	case *parse.IfNode:
		inner := s.child(s.dot)
		w.mark(w.pipe(n.Pipe, inner, true), UseRead)
		w.list(n.List, inner)
		w.list(n.ElseList, s.child(s.dot))
	case *parse.WithNode:
		inner := s.child(s.dot)
		r := w.pipe(n.Pipe, inner, true)
		w.mark(r, UseRead)
		inner.dot = ref{root: r.root, paths: r.paths}
		w.list(n.List, inner)
		w.list(n.ElseList, s.child(s.dot))
	case *parse.RangeNode:
		w.rangeNode(n, s)
	case *parse.TemplateNode:
		if n.Pipe != nil {
			w.mark(w.pipe(n.Pipe, s, true), UseFree)
		}
		w.out.write("X")
	}
}

// rangeNode: the ranged value is a list or a map (UseRange); inside, dot and
// the last variable are its element, the first of two its index or key.
func (w *walker) rangeNode(n *parse.RangeNode, s *scope) {
	inner := s.child(s.dot)
	r := w.pipe(n.Pipe, inner, false)
	w.mark(r, UseRange)
	elem := r.child(Elem)
	switch decl := n.Pipe.Decl; len(decl) {
	case 1:
		inner.vars[decl[0].Ident[0]] = elem
	case 2:
		inner.vars[decl[0].Ident[0]] = ref{}
		inner.vars[decl[1].Ident[0]] = elem
	}
	inner.dot = elem
	w.list(n.List, inner)
	w.list(n.ElseList, s.child(s.dot))
}

// pipe evaluates a pipeline, each command's result the last argument of the
// next; with declare, its variables are declared or assigned.
func (w *walker) pipe(p *parse.PipeNode, s *scope, declare bool) ref {
	var r ref
	for i, c := range p.Cmds {
		var in *ref
		if i > 0 {
			in = &r
		}
		r = w.command(c, s, in)
	}
	if declare {
		for _, v := range p.Decl {
			if p.IsAssign {
				s.assign(v.Ident[0], r)
			} else {
				s.vars[v.Ident[0]] = r
			}
		}
	}
	return ref{root: r.root, paths: r.paths, shown: r.shown}
}

func (w *walker) command(c *parse.CommandNode, s *scope, piped *ref) ref {
	if len(c.Args) == 0 {
		return ref{}
	}
	fn, ok := c.Args[0].(*parse.IdentifierNode)
	if !ok {
		// A value; words after it would be method arguments, which values lack.
		for _, a := range c.Args[1:] {
			w.mark(w.arg(a, s), UseFree)
		}
		if piped != nil {
			w.mark(*piped, UseFree)
		}
		return w.arg(c.Args[0], s)
	}
	args := make([]ref, 0, len(c.Args))
	for _, a := range c.Args[1:] {
		args = append(args, w.arg(a, s))
	}
	if piped != nil {
		args = append(args, *piped)
	}
	return w.call(fn.Ident, args)
}

func (w *walker) arg(n parse.Node, s *scope) ref {
	switch n := n.(type) {
	case *parse.DotNode:
		return s.dot
	case *parse.FieldNode:
		return w.fields(s.dot, n.Ident)
	case *parse.VariableNode:
		return w.fields(s.lookup(n.Ident[0]), n.Ident[1:])
	case *parse.ChainNode:
		return w.fields(w.arg(n.Node, s), n.Field)
	case *parse.PipeNode:
		return w.pipe(n, s, true)
	case *parse.IdentifierNode:
		return w.call(n.Ident, nil) // a function called without arguments
	case *parse.StringNode:
		return ref{lit: n.Text, isLit: true}
	case *parse.NumberNode:
		return ref{lit: n.Text, isLit: true, isNum: true}
	}
	return ref{}
}

// fields reads names below base: below the top-level context only .Values
// leads to values.
func (w *walker) fields(base ref, names []string) ref {
	if len(names) == 0 {
		return base
	}
	out := w.below(base.paths, names)
	if base.root && names[0] == "Values" {
		out = out.union(w.below([][]string{{}}, names[1:]))
	}
	return out
}

// below reads names below each of paths; each level a field is read from
// is a map.
func (w *walker) below(paths [][]string, names []string) ref {
	out := ref{paths: paths}
	for _, n := range names {
		use := UseRead | UseObject
		if n == Elem {
			use = UseRead
		}
		w.mark(out, use)
		out = out.child(n)
	}
	w.mark(out, UseRead)
	return out
}
