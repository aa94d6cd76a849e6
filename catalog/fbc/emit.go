package fbc

import (
	"strings"
	"unicode/utf8"
)

// This file turns one compact JSON object, as encoding/json writes it,
// into the YAML document that sigs.k8s.io/yaml.JSONToYAML makes of it:
// yaml.v2 (go.yaml.in/yaml/v2) parses the JSON into generic values and
// marshals them in block style with its defaults (indent 2, width 80).
// The emitter follows yaml.v2's rules on the subset of JSON it accepts:
//
//   - strings of printable characters and line feeds, without tabs,
//     other line breaks, other controls or a byte order mark (escaped in
//     JSON as \n, \" and \\ only), keys of at most 128 bytes without
//     line feeds;
//   - integers that fit in an int64 (yaml.v2 reads them as int);
//   - true, false, null, objects without duplicate keys, arrays;
//   - an object at the root with at least one key.
//
// The parser refuses anything else (floats, \u escapes, tabs, emoji and
// other characters past U+FFFF, which yaml.v2 escapes, ...) and the
// caller then takes yaml.v2's path for the whole blob.

// bestWidth is the column past which yaml.v2 folds scalars at a space.
const bestWidth = 80

// emitter writes YAML as yaml.v2's emitter does, keeping the same state:
// the column, whether the last character written was whitespace and
// whether only indentation was written on the line so far.
type emitter struct {
	out        []byte
	column     int
	whitespace bool
	indention  bool
	parser     parser
}

// document appends the YAML document of the JSON object js to e.out, or
// reports false, leaving e.out as it was, if js holds anything the
// emitter does not handle.
func (e *emitter) document(js []byte) bool {
	e.parser.in, e.parser.pos, e.parser.depth = string(js), 0, 0
	root, ok := e.parser.value()
	if !ok || root.kind != 'o' || len(root.kids) == 0 {
		return false
	}
	if rest := e.parser.in[e.parser.pos:]; rest != "" && rest != "\n" {
		return false
	}
	e.column, e.whitespace, e.indention = 0, true, true
	e.node(&root, -1, false)
	e.writeIndent(0)
	return true
}

// node writes n as the value of a mapping whose keys are at indent ind
// (inMapping), as an item of a sequence whose dashes are at ind, or as
// the root (ind -1).
func (e *emitter) node(n *node, ind int, inMapping bool) {
	switch n.kind {
	case 'o':
		if len(n.kids) == 0 {
			e.indicator("{", true, true, false)
			e.indicator("}", false, false, false)
			return
		}
		mi := blockIndent(ind)
		for i := range n.kids {
			e.writeIndent(mi)
			e.key(n.kids[i].key)
			e.indicator(":", false, false, false)
			e.node(&n.kids[i], mi, true)
		}
	case 'a':
		if len(n.kids) == 0 {
			e.indicator("[", true, true, false)
			e.indicator("]", false, false, false)
			return
		}
		// A sequence that is a mapping's value is not indented
		// further than the mapping's keys.
		si := blockIndent(ind)
		if inMapping && ind >= 0 {
			si = ind
		}
		for i := range n.kids {
			e.writeIndent(si)
			e.indicator("-", true, false, true)
			e.node(&n.kids[i], si, false)
		}
	case 's':
		e.stringValue(n.s, ind+2)
	case 'i':
		e.plain(n.s, false, 0)
	case 't':
		e.plain("true", false, 0)
	case 'f':
		e.plain("false", false, 0)
	case 'z':
		e.plain("null", false, 0)
	}
}

// blockIndent is the indent of a block collection inside one at ind: two
// more, or 0 at the root.
func blockIndent(ind int) int {
	if ind < 0 {
		return 0
	}
	return ind + 2
}

// key writes a mapping key: never folded, never a block scalar.
func (e *emitter) key(s string) {
	switch {
	case !canBePlain(s):
		e.doubleQuoted(s, false, 0)
	case blockPlainAllowed(s):
		e.plain(s, false, 0)
	default:
		e.singleQuoted(s, false, 0)
	}
}

// stringValue writes a string that is a value or an item, with the style
// yaml.v2 picks: literal for a multi-line string, plain if the string
// reads back as itself and plain is allowed, else single- or
// double-quoted. ind is the indent of continuation lines.
func (e *emitter) stringValue(s string, ind int) {
	switch {
	case strings.IndexByte(s, '\n') >= 0:
		if literalAllowed(s) {
			e.literal(s, ind)
		} else {
			e.doubleQuoted(s, true, ind)
		}
	case !canBePlain(s):
		e.doubleQuoted(s, true, ind)
	case blockPlainAllowed(s):
		e.plain(s, true, ind)
	default:
		e.singleQuoted(s, true, ind)
	}
}

func (e *emitter) put(c byte) {
	e.out = append(e.out, c)
	e.column++
}

// char writes a byte of a scalar's text; the column counts characters.
func (e *emitter) char(c byte) {
	e.out = append(e.out, c)
	if c&0xc0 != 0x80 {
		e.column++
	}
}

func (e *emitter) newline() {
	e.out = append(e.out, '\n')
	e.column = 0
}

// writeIndent starts a new line unless the current one holds nothing but
// the indentation so far, and indents to ind.
func (e *emitter) writeIndent(ind int) {
	if !e.indention || e.column > ind || e.column == ind && !e.whitespace {
		e.newline()
	}
	for e.column < ind {
		e.put(' ')
	}
	e.whitespace = true
	e.indention = true
}

func (e *emitter) indicator(ind string, needWhitespace, isWhitespace, isIndention bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	e.out = append(e.out, ind...)
	e.column += len(ind)
	e.whitespace = isWhitespace
	e.indention = e.indention && isIndention
}

// plain writes a plain scalar; a space past the width is a line break
// when fold is set, unless more spaces follow it.
func (e *emitter) plain(s string, fold bool, ind int) {
	if !e.whitespace {
		e.put(' ')
	}
	spaces := false
	for i := 0; i < len(s); {
		if s[i] == ' ' {
			if fold && !spaces && e.column > bestWidth && s[i+1] != ' ' {
				e.writeIndent(ind)
			} else {
				e.put(' ')
			}
			spaces = true
			i++
			continue
		}
		// The run of other characters up to the next space, at once.
		j := strings.IndexByte(s[i:], ' ')
		if j < 0 {
			j = len(s) - i
		}
		e.out = append(e.out, s[i:i+j]...)
		e.column += utf8.RuneCountInString(s[i : i+j])
		e.indention = false
		spaces = false
		i += j
	}
	e.whitespace = false
	e.indention = false
}

func (e *emitter) singleQuoted(s string, fold bool, ind int) {
	e.indicator("'", true, false, false)
	spaces := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if fold && !spaces && e.column > bestWidth && i > 0 && i < len(s)-1 && s[i+1] != ' ' {
				e.writeIndent(ind)
			} else {
				e.put(' ')
			}
			spaces = true
			continue
		}
		if s[i] == '\'' {
			e.put('\'')
		}
		e.char(s[i])
		e.indention = false
		spaces = false
	}
	e.indicator("'", false, false, false)
	e.whitespace = false
	e.indention = false
}

func (e *emitter) doubleQuoted(s string, fold bool, ind int) {
	e.indicator(`"`, true, false, false)
	spaces := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n', '"', '\\':
			e.put('\\')
			if c == '\n' {
				c = 'n'
			}
			e.put(c)
			spaces = false
		case ' ':
			if fold && !spaces && e.column > bestWidth && i > 0 && i < len(s)-1 {
				e.writeIndent(ind)
				if s[i+1] == ' ' {
					// Escape the next space so that folding keeps it.
					e.put('\\')
				}
			} else {
				e.put(' ')
			}
			spaces = true
		default:
			e.char(c)
			spaces = false
		}
	}
	e.indicator(`"`, false, false, false)
	e.whitespace = false
	e.indention = false
}

// literal writes a literal block scalar (`|`), with an indentation hint
// if the first line starts with a space or is empty and yaml.v2's
// chomping hint: strip (-) without a final line break, keep (+) with more
// than one, clip (none) with exactly one.
func (e *emitter) literal(s string, ind int) {
	e.indicator("|", true, false, false)
	if s[0] == ' ' || s[0] == '\n' {
		e.indicator("2", false, false, false)
	}
	switch n := len(s); {
	case s[n-1] != '\n':
		e.indicator("-", false, false, false)
	case n == 1 || s[n-2] == '\n':
		e.indicator("+", false, false, false)
	}
	e.newline()
	e.indention = true
	e.whitespace = true
	breaks := true
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			e.newline()
			e.indention = true
			breaks = true
			continue
		}
		if breaks {
			e.writeIndent(ind)
		}
		e.char(s[i])
		e.indention = false
		breaks = false
	}
}
