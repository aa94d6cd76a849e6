package fbc

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
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
// other characters past U+FFFF, which yaml.v2 escapes, ...) and the caller then takes yaml.v2's path for the whole blob.

// maxSimpleKey is the longest key yaml.v2 writes as `key: value`; longer
// ones get the `? key` form, which the emitter does not write.
const maxSimpleKey = 128

// bestWidth is the column past which yaml.v2 folds scalars at a space.
const bestWidth = 80

// node is a JSON value.
type node struct {
	// kind is 's' string, 'i' integer, 't' true, 'f' false, 'z' null,
	// 'o' object or 'a' array.
	kind byte
	// s is the string's value or the integer's text.
	s string
	// key is the key of an object's value.
	key string
	// kids are an array's items or an object's values, in yaml.v2's
	// order of their keys.
	kids []node
}

// parser reads the compact JSON encoding/json writes, refusing what the
// emitter does not handle.
type parser struct {
	// in is the JSON, as a string so that the values' strings share its
	// memory.
	in  string
	pos int
	// unescaped collects a string that had escapes.
	unescaped []byte
	// depth counts the arrays and objects around the value being read.
	depth int
}

// maxDepth is far below yaml.v2's limit of 10000 nested flow collections,
// which a bundle's property value can pass by the few levels of the
// bundle around it.
const maxDepth = 1000

func (p *parser) value() (node, bool) {
	if p.pos >= len(p.in) {
		return node{}, false
	}
	switch c := p.in[p.pos]; {
	case c == '{' || c == '[':
		if p.depth >= maxDepth {
			return node{}, false
		}
		p.depth++
		defer func() { p.depth-- }()
		if c == '{' {
			return p.object()
		}
		return p.array()
	case c == '"':
		s, ok := p.str()
		return node{kind: 's', s: s}, ok
	case c == 't':
		return p.literal("true", 't')
	case c == 'f':
		return p.literal("false", 'f')
	case c == 'n':
		return p.literal("null", 'z')
	case c == '-' || c >= '0' && c <= '9':
		return p.integer()
	}
	return node{}, false
}

func (p *parser) literal(word string, kind byte) (node, bool) {
	if !strings.HasPrefix(p.in[p.pos:], word) {
		return node{}, false
	}
	p.pos += len(word)
	return node{kind: kind}, true
}

// integer reads a number, accepting only the integers yaml.v2 reads back
// as an int with the same text (not -0, not beyond int64).
func (p *parser) integer() (node, bool) {
	start := p.pos
	if p.in[p.pos] == '-' {
		p.pos++
	}
	for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
		p.pos++
	}
	text := p.in[start:p.pos]
	if p.pos < len(p.in) {
		switch p.in[p.pos] {
		case '.', 'e', 'E':
			return node{}, false
		}
	}
	if text == "-0" {
		return node{}, false
	}
	if _, err := strconv.ParseInt(text, 10, 64); err != nil {
		return node{}, false
	}
	return node{kind: 'i', s: text}, true
}

// str reads a string of characters yaml.v2 prints as they are (see
// printable) whose only escapes are \", \\ and \n.
func (p *parser) str() (string, bool) {
	p.pos++ // the opening quote
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			s := p.in[start:p.pos]
			p.pos++
			return s, true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20 || c == 0x7f:
			return "", false
		case c > 0x7f:
			n := printable(p.in[p.pos:])
			if n == 0 {
				return "", false
			}
			p.pos += n
			continue
		}
		p.pos++
	}
	return "", false
}

// printable is the length of the UTF-8 character s starts with if
// yaml.v2 writes it as it is in every style (a printable character, not
// a line break, not a byte order mark), else 0.
func printable(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n <= 1:
		return 0
	case r < 0xa0, r >= 0xd800 && r <= 0xdfff, r == 0x2028, r == 0x2029, r == 0xfeff, r > 0xfffd:
		return 0
	}
	return n
}

func (p *parser) escapedStr(start int) (string, bool) {
	b := append(p.unescaped[:0], p.in[start:p.pos]...)
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.unescaped = b
			return string(b), true
		case c == '\\':
			if p.pos+1 >= len(p.in) {
				return "", false
			}
			switch p.in[p.pos+1] {
			case '"':
				b = append(b, '"')
			case '\\':
				b = append(b, '\\')
			case 'n':
				b = append(b, '\n')
			default:
				return "", false
			}
			p.pos += 2
			continue
		case c < 0x20 || c == 0x7f:
			return "", false
		case c > 0x7f:
			n := printable(p.in[p.pos:])
			if n == 0 {
				return "", false
			}
			b = append(b, p.in[p.pos:p.pos+n]...)
			p.pos += n
			continue
		}
		b = append(b, c)
		p.pos++
	}
	return "", false
}

func (p *parser) array() (node, bool) {
	p.pos++
	n := node{kind: 'a'}
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return n, true
	}
	for {
		v, ok := p.value()
		if !ok {
			return node{}, false
		}
		n.kids = append(n.kids, v)
		if p.pos >= len(p.in) {
			return node{}, false
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return n, true
		default:
			return node{}, false
		}
	}
}

// object reads an object and puts its keys in yaml.v2's order.
func (p *parser) object() (node, bool) {
	p.pos++
	n := node{kind: 'o'}
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return n, true
	}
	for {
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return node{}, false
		}
		k, ok := p.str()
		if !ok || len(k) > maxSimpleKey || strings.IndexByte(k, '\n') >= 0 {
			return node{}, false
		}
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return node{}, false
		}
		p.pos++
		v, ok := p.value()
		if !ok {
			return node{}, false
		}
		v.key = k
		n.kids = append(n.kids, v)
		if p.pos >= len(p.in) {
			return node{}, false
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			continue
		case '}':
			p.pos++
		default:
			return node{}, false
		}
		break
	}
	slices.SortFunc(n.kids, func(a, b node) int {
		switch {
		case keyLess(a.key, b.key):
			return -1
		case keyLess(b.key, a.key):
			return 1
		}
		return 0
	})
	for i := 1; i < len(n.kids); i++ {
		if n.kids[i].key == n.kids[i-1].key {
			// yaml.v2 keeps the last of duplicate keys; rare enough
			// to leave to it.
			return node{}, false
		}
	}
	if !totallyOrdered(n.kids) {
		return node{}, false
	}
	return n, true
}

// maxOrderCheck is the most keys with digits whose order totallyOrdered
// checks pair by pair.
const maxOrderCheck = 256

// totallyOrdered reports whether keyLess orders the sorted keys of an
// object consistently. It does for keys without digits (it is then a
// lexicographic order), but its numeric comparison of digit runs is not
// transitive ("a1" < "a01" < "a1b" < "a1" can happen with leading zeros):
// for such keys yaml.v2's order depends on Go's random map order, and the
// blob is left to it.
func totallyOrdered(kids []node) bool {
	digits := false
	for i := range kids {
		if strings.ContainsAny(kids[i].key, "0123456789") || !isASCII(kids[i].key) {
			digits = true
			break
		}
	}
	if !digits {
		return true
	}
	if len(kids) > maxOrderCheck {
		return false
	}
	for i := range kids {
		for j := i + 1; j < len(kids); j++ {
			if !keyLess(kids[i].key, kids[j].key) {
				return false
			}
		}
	}
	return true
}

// keyLess is yaml.v2's order of string map keys (sorter.go): letters
// before other characters, runs of digits compared as numbers.
func keyLess(a, b string) bool {
	if !isASCII(a) || !isASCII(b) {
		return runesLess([]rune(a), []rune(b))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			// A zero inside a number that started earlier counts as a
			// digit of it, not as a leading zero.
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// runesLess is keyLess on characters: Unicode letters and digits.
func runesLess(a, b []rune) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := unicode.IsLetter(a[i]), unicode.IsLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && unicode.IsDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && unicode.IsDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

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

// blockPlainAllowed reports whether yaml.v2's emitter accepts s (printable
// characters, no line break) as a plain scalar in block context: no space at
// either end, no indicator at the start, no ": " or " #" inside, and not
// a document marker.
func blockPlainAllowed(s string) bool {
	n := len(s)
	if n == 0 {
		return true
	}
	if s[0] == ' ' || s[n-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	spaceAfter := func(i int) bool { return i+1 >= n || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if spaceAfter(0) {
			return false
		}
	}
	for i := 1; i < n; i++ {
		switch s[i] {
		case ':':
			if spaceAfter(i) {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}

// literalAllowed reports whether yaml.v2's emitter accepts a multi-line s
// (printable characters and line feeds) as a block scalar: no space at its end
// and none right before a line break.
func literalAllowed(s string) bool {
	return s[len(s)-1] != ' ' && !strings.Contains(s, " \n")
}

// canBePlain reports whether yaml.v2's encoder would write s unquoted:
// s read as a plain scalar would resolve to the same string (not a
// null, bool, int, float, timestamp), and it is not a YAML 1.1 base 60
// float, which yaml.v2 quotes for other parsers' sake.
func canBePlain(s string) bool {
	return resolvesToString(s) && !isBase60Float(s)
}

// resolvesToString reports whether yaml.v2 (resolve.go) reads the plain
// scalar s as a string.
func resolvesToString(s string) bool {
	if s == "" {
		return false // null
	}
	switch c := s[0]; {
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return !yaml11Words[s]
	case c == '.':
		if yaml11Words[s] {
			return false
		}
		_, err := strconv.ParseFloat(s, 64)
		return err != nil
	case c == '+' || c == '-' || isDigit(c):
		return !yaml11Words[s] && !resolvesToNumberOrTime(s)
	}
	return true
}

// yaml11Words are the plain scalars yaml.v2 maps to a bool, null or
// special float (YAML 1.1).
var yaml11Words = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`y Y yes Yes YES true True TRUE on On ON
		n N no No NO false False FALSE off Off OFF ~ null Null NULL
		.nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF`) {
		m[w] = true
	}
	return m
}()

// yamlFloat is the float syntax yaml.v2 accepts.
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// base60Float is YAML 1.1's sexagesimal float.
var base60Float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// timestampFormats are the timestamps yaml.v2 resolves.
var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// resolvesToNumberOrTime reports whether yaml.v2 reads s, which starts
// with a sign or a digit, as a timestamp, an integer (any base, with
// underscores) or a float.
func resolvesToNumberOrTime(s string) bool {
	if len(s) > 4 && s[4] == '-' && isDigit(s[0]) && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3]) {
		for _, f := range timestampFormats {
			if _, err := time.Parse(f, s); err == nil {
				return true
			}
		}
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	if yamlFloat.MatchString(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return true
		}
	}
	switch {
	case strings.HasPrefix(plain, "0b"):
		if _, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
			return true
		}
	case strings.HasPrefix(plain, "-0b"):
		if _, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
			return true
		}
	}
	return false
}

func isBase60Float(s string) bool {
	if s == "" || !(s[0] == '+' || s[0] == '-' || isDigit(s[0])) || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60Float.MatchString(s)
}
