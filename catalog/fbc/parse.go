package fbc

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file reads a blob's JSON into nodes, refusing what the emitter does
// not handle, and puts object keys in yaml.v2's order.

// maxSimpleKey is the longest key yaml.v2 writes as `key: value`; longer
// ones get the `? key` form, which the emitter does not write.
const maxSimpleKey = 128

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
// before other characters, runs of digits compared as numbers. ASCII keys,
// the usual ones, are compared as bytes, others as Unicode characters.
func keyLess(a, b string) bool {
	if !isASCII(a) || !isASCII(b) {
		return orderedLess([]rune(a), []rune(b), unicode.IsLetter, unicode.IsDigit)
	}
	return orderedLess([]byte(a), []byte(b), isLetter, isDigit)
}

func orderedLess[C byte | rune](a, b []C, letter, digit func(C) bool) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := letter(a[i]), letter(b[i])
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
			for j := i - 1; j >= 0 && digit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && digit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && digit(b[bi]); bi++ {
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
