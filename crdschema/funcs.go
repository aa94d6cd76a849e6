package crdschema

// funcKind is how a template function treats values handed to it.
type funcKind int

const (
	// freeFunc may pass its arguments through whole (toYaml, tpl, include,
	// merge, dict and every function not listed): values handed to it are
	// free-form.
	freeFunc funcKind = iota
	// passthroughFunc returns one of its arguments.
	passthroughFunc
	// readerFunc reads its arguments as scalars (or measures them) and
	// returns something else.
	readerFunc
	// keysFunc lists the keys or elements of a list or map: its keys are data.
	keysFunc
)

func kindOfFunc(name string) funcKind {
	switch name {
	case "default", "required", "coalesce", "ternary", "and", "or":
		return passthroughFunc
	case "quote", "squote", "print", "printf", "println", "eq", "ne", "lt", "le", "gt", "ge", "not",
		"empty", "len", "int", "int64", "float64", "atoi", "toString", "trunc", "trimSuffix", "trimPrefix", "trim",
		"trimAll", "upper", "lower", "title", "untitle", "replace", "contains", "hasPrefix", "hasSuffix", "b64enc",
		"b64dec", "sha256sum", "sha1sum", "adler32sum", "nindent", "indent", "cat", "join", "splitList", "split",
		"regexMatch", "regexReplaceAll", "regexFind", "semverCompare", "semver", "kindIs", "kindOf", "typeOf", "typeIs",
		"add", "add1", "sub", "mul", "div", "mod", "max", "min", "ceil", "floor", "round", "urlquery", "html", "js",
		"fail", "camelcase", "snakecase", "kebabcase", "abbrev", "substr", "nospace", "repeat", "wrap", "plural",
		"toDate", "date", "htmlDate", "duration", "durationRound", "fromYaml", "fromJson", "has", "toStrings",
		"lookup", "sortAlpha":
		return readerFunc
	case "keys", "values", "uniq", "compact", "reverse":
		return keysFunc
	}
	return freeFunc
}

// anyTypeFuncs read arguments of any type without failing: they print
// them, or test their kind or emptiness.
var anyTypeFuncs = map[string]bool{"quote": true, "squote": true, "print": true, "printf": true, "println": true,
	"toString": true, "toStrings": true, "cat": true, "join": true, "empty": true, "not": true, "kindIs": true,
	"kindOf": true, "typeOf": true, "typeIs": true, "fail": true}

// formatFuncs print their one argument as text: where the text lands,
// the value does.
var formatFuncs = map[string]bool{"quote": true, "squote": true, "toString": true, "print": true}

// numberFuncs compute with or compare their arguments as numbers.
var numberFuncs = map[string]bool{"int": true, "int64": true, "float64": true, "add": true, "add1": true, "sub": true,
	"mul": true, "div": true, "mod": true, "max": true, "min": true, "ceil": true, "floor": true, "round": true,
	"lt": true, "le": true, "gt": true, "ge": true}

// call applies function name to args, marking how it uses values.
func (w *walker) call(name string, args []ref) ref {
	if r, ok := w.lookupCall(name, args); ok {
		return r
	}
	if name == "tpl" {
		// The template text, from the values, may read any value.
		w.usage.add([]string{AnyKeys}, UseAnyKey, w.file)
	}
	use := UseFree
	switch kindOfFunc(name) {
	case passthroughFunc:
		out := ref{}
		lits := Use(0)
		for _, a := range args {
			w.mark(a, UseRead)
			out = out.union(a)
			lits |= literalDefault(name, a)
		}
		if lits != 0 {
			w.mark(out, lits)
		}
		return out
	case readerFunc:
		use = UseRead
		if numberFuncs[name] {
			use |= UseNumber
		}
		if !anyTypeFuncs[name] {
			use |= UseTyped
		}
	case keysFunc:
		use = UseRange
	}
	for _, a := range args {
		w.mark(a, use)
	}
	if formatFuncs[name] && len(args) == 1 {
		return ref{shown: args[0].landing().paths}
	}
	return ref{}
}

// literalDefault is what a literal handed to default or coalesce says the
// value may also be.
func literalDefault(name string, a ref) Use {
	switch {
	case name != "default" && name != "coalesce", !a.isLit:
		return 0
	case a.isNum:
		return UseNumberDefault
	case a.lit != "":
		return UseStringDefault
	}
	return 0
}

// lookupCall applies the functions that read below a map or list: index,
// get, hasKey, dig, first and last. ok is false for any other.
func (w *walker) lookupCall(name string, args []ref) (r ref, ok bool) {
	switch {
	case name == "index" && len(args) > 0:
		return w.keyed(args[0], args[1:]), true
	case name == "get" && len(args) == 2:
		return w.keyed(args[0], args[1:]), true
	case name == "hasKey" && len(args) == 2:
		w.keyed(args[0], args[1:])
		return ref{}, true
	case name == "dig" && len(args) >= 2:
		// dig "a" "b" default map
		w.mark(args[len(args)-2], UseRead)
		return w.keyed(args[len(args)-1], args[:len(args)-2]), true
	case (name == "first" || name == "last") && len(args) == 1:
		w.mark(args[0], UseRead)
		return args[0].child(Elem), true
	}
	return ref{}, false
}

// keyed reads keys below base: constant keys are fields (numbers
// elements); a key computed at render time may name any field, so base is
// free-form.
func (w *walker) keyed(base ref, keys []ref) ref {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		switch {
		case !k.isLit:
			w.mark(w.fields(base, names), UseFree)
			return ref{}
		case k.isNum:
			names = append(names, Elem)
		default:
			names = append(names, k.lit)
		}
	}
	return w.fields(base, names)
}
