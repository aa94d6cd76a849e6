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

// call applies function name to args, marking how it uses values.
func (w *walker) call(name string, args []ref) ref {
	switch {
	case name == "index":
		return w.index(args)
	case name == "get" && len(args) == 2:
		return w.keyed(args[0], args[1:])
	case name == "hasKey" && len(args) == 2:
		w.keyed(args[0], args[1:])
		return ref{}
	case name == "dig" && len(args) >= 2:
		// dig "a" "b" default map
		return w.keyed(args[len(args)-1], args[:len(args)-2])
	case name == "first" || name == "last":
		for _, a := range args {
			w.mark(a, UseRead)
		}
		if len(args) == 1 {
			return args[0].child(Elem)
		}
		return ref{}
	}
	switch kindOfFunc(name) {
	case passthroughFunc:
		out := ref{}
		for _, a := range args {
			w.mark(a, UseRead)
			out = out.union(a)
		}
		return out
	case readerFunc:
		for _, a := range args {
			w.mark(a, UseRead)
		}
		return ref{}
	case keysFunc:
		for _, a := range args {
			w.mark(a, UseRange)
		}
		return ref{}
	}
	for _, a := range args {
		w.mark(a, UseFree)
	}
	return ref{}
}

// index is `index x k1 k2...`: constant keys are fields (numbers elements);
// a key computed at render time may name any field, so x is free-form.
func (w *walker) index(args []ref) ref {
	if len(args) == 0 {
		return ref{}
	}
	return w.keyed(args[0], args[1:])
}

// keyed reads keys below base.
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
