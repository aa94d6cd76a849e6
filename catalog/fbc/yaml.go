package fbc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	sigsyaml "sigs.k8s.io/yaml"
)

// This file is a parser for the subset of YAML that catalogs are written
// in: block mappings and sequences, single-line plain and quoted scalars,
// literal block scalars, empty flow collections, comments. It returns
// documents as the values encoding/json would decode from the JSON that
// sigs.k8s.io/yaml makes of them (map[string]any, []any, string, float64,
// bool, nil). Whatever it is not certain of (anchors, tags, flow
// collections, multi-line plain or quoted scalars, tabs, keys that are not
// plain strings, duplicate keys...) makes it give up on the file, and the
// caller parses that file the way declcfg does.

// yamlParser parses one file.
type yamlParser struct {
	lines []yamlLine
	i     int
	// scalars caches the resolution of plain scalars that YAML 1.1 may read
	// as something other than a string (versions, numbers, y/n...).
	scalars map[string]any
}

// yamlLine is a line without its indentation.
type yamlLine struct {
	indent int
	// text is the line without trailing spaces, full with them (a literal
	// block scalar keeps them).
	text, full string
}

// blank tells whether the line holds nothing but a comment or spaces.
func (l yamlLine) blank() bool { return l.text == "" || l.text[0] == '#' }

// raw is the line as it was in the file.
func (l yamlLine) raw() string { return strings.Repeat(" ", l.indent) + l.full }

// errGiveUp is returned, never shown, when a file needs the full YAML parser.
type giveUp struct{}

func (giveUp) Error() string { return "not in the fast YAML subset" }

var errGiveUp error = giveUp{}

// emptyDocument is a give-up that knows the reason: declcfg's reader hands
// the YAML parser an empty document there (only separators, blank lines or
// comments), which declcfg fails on with a message that does not say so.
type emptyDocument struct{ line int }

func (e emptyDocument) Error() string {
	return fmt.Sprintf("line %d: an empty YAML document (nothing but a separator, blank lines or comments): remove it", e.line)
}

// errEmpty is document's answer for a document without content.
var errEmpty = errors.New("empty document")

// parseYAMLStream splits a file into documents the way apimachinery's
// YAMLReader does (a line starting with "---") and parses each; it
// returns errGiveUp when the file is outside the subset.
func parseYAMLStream(data []byte, scalars map[string]any) ([]map[string]any, error) {
	if !plainText(data) {
		return nil, errGiveUp
	}
	var docs []map[string]any
	var cur []yamlLine
	// declcfg's reader fails on a stream ending with a separator, and on
	// some without any document: leave those to it.
	endsWithSeparator, sawSeparator := true, false
	line, docStart := 0, 1
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		p := yamlParser{lines: cur, scalars: scalars}
		doc, err := p.document()
		if errors.Is(err, errEmpty) {
			return emptyDocument{line: docStart}
		}
		if err != nil {
			return err
		}
		docs = append(docs, doc)
		cur = nil
		return nil
	}
	for len(data) > 0 {
		var text []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, data = data[:i], data[i+1:]
		} else {
			text, data = data, nil
		}
		line++
		if bytes.HasPrefix(text, []byte("---")) {
			// declcfg's reader hands the YAML parser a separator line that
			// opens a document: "---#" is no document start to that parser.
			rest := bytes.TrimLeft(text[3:], " ")
			if len(rest) > 0 && (rest[0] != '#' || len(rest) == len(text)-3) {
				return nil, errGiveUp
			}
			// Two separators in a row make declcfg's reader hand the YAML
			// parser an empty document, an error to declcfg.
			if len(cur) == 0 && endsWithSeparator && sawSeparator {
				return nil, emptyDocument{line: line}
			}
			if err := flush(); err != nil {
				return nil, err
			}
			endsWithSeparator, sawSeparator = true, true
			docStart = line + 1
			continue
		}
		if bytes.HasPrefix(text, []byte("...")) || bytes.HasPrefix(text, []byte("%")) {
			return nil, errGiveUp
		}
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		if indent < len(text) {
			endsWithSeparator = false
		}
		full := string(text[indent:])
		cur = append(cur, yamlLine{indent: indent, text: strings.TrimRight(full, " "), full: full})
	}
	if endsWithSeparator {
		return nil, emptyDocument{line: line}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// plainText accepts text that the YAML reader and our line splitting read
// the same way: valid UTF-8 of printable characters, newlines as the only
// line breaks, no tabs, no byte order mark.
func plainText(data []byte) bool {
	ascii := true
	for _, c := range data {
		if c >= utf8.RuneSelf {
			ascii = false
			continue
		}
		if (c < 0x20 && c != '\n') || c == 0x7f {
			return false
		}
	}
	if ascii {
		return true
	}
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		data = data[n:]
		switch {
		case r == utf8.RuneError,
			r >= 0x80 && r <= 0x9f,   // C1 controls, NEL a line break in YAML 1.1
			r == 0x2028, r == 0x2029, // line and paragraph separators
			r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
	}
	return true
}

// document parses a document whose root is a mapping.
func (p *yamlParser) document() (map[string]any, error) {
	p.skipBlank()
	if p.i == len(p.lines) {
		return nil, errEmpty
	}
	if isSeqItem(p.lines[p.i].text) {
		return nil, errGiveUp
	}
	v, err := p.mapping(p.lines[p.i].indent)
	if err != nil {
		return nil, err
	}
	p.skipBlank()
	if p.i != len(p.lines) {
		return nil, errGiveUp
	}
	return v, nil
}

func (p *yamlParser) skipBlank() {
	for p.i < len(p.lines) && p.lines[p.i].blank() {
		p.i++
	}
}

func isSeqItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

// block parses the node starting at the current line, indented by indent.
func (p *yamlParser) block(indent int) (any, error) {
	if isSeqItem(p.lines[p.i].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

func (p *yamlParser) mapping(indent int) (map[string]any, error) {
	m := map[string]any{}
	for {
		p.skipBlank()
		if p.i == len(p.lines) {
			return m, nil
		}
		l := p.lines[p.i]
		if l.indent < indent {
			return m, nil
		}
		if l.indent > indent || isSeqItem(l.text) {
			return nil, errGiveUp
		}
		key, rest, err := p.key(l.text)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, errGiveUp
		}
		p.i++
		v, err := p.value(indent, rest, true)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

func (p *yamlParser) sequence(indent int) ([]any, error) {
	s := []any{}
	for {
		p.skipBlank()
		if p.i == len(p.lines) {
			return s, nil
		}
		l := p.lines[p.i]
		if l.indent < indent || (l.indent == indent && !isSeqItem(l.text)) {
			// The caller decides: the next key of a mapping whose value this
			// sequence is, or an error.
			return s, nil
		}
		if l.indent > indent {
			return nil, errGiveUp
		}
		rest := l.text[1:]
		content := strings.TrimLeft(rest, " ")
		var v any
		var err error
		switch {
		case content == "" || content[0] == '#':
			p.i++
			v, err = p.value(indent, "", false)
		case isSeqItem(content) || p.looksLikeKey(content):
			// A compact node: it starts on the item's line, at the column
			// of its content.
			col := indent + 1 + len(rest) - len(content)
			p.lines[p.i] = yamlLine{indent: col, text: content, full: content}
			v, err = p.block(col)
		default:
			p.i++
			v, err = p.value(indent, content, false)
		}
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
}

// looksLikeKey tells whether text starts a mapping entry.
func (p *yamlParser) looksLikeKey(text string) bool {
	_, _, err := p.key(text)
	return err == nil
}

// key splits "key: rest" into a plain or quoted string key and the rest.
func (p *yamlParser) key(text string) (key, rest string, err error) {
	switch text[0] {
	case '"', '\'':
		key, n, err := quoted(text)
		if err != nil {
			return "", "", err
		}
		after := text[n:]
		if after == ":" || strings.HasPrefix(after, ": ") {
			return key, after[1:], nil
		}
		return "", "", errGiveUp
	}
	if !plainStart(text) {
		return "", "", errGiveUp
	}
	i := strings.Index(text, ": ")
	if i < 0 {
		if !strings.HasSuffix(text, ":") {
			return "", "", errGiveUp
		}
		i = len(text) - 1
	}
	key = strings.TrimRight(text[:i], " ")
	if strings.Contains(key, " #") || key == "<<" {
		return "", "", errGiveUp
	}
	// A key YAML 1.1 reads as a bool, number or null becomes another
	// string in JSON ("y" is "true"): leave those to the full parser.
	if v, err := p.resolve(key); err != nil || v != key {
		return "", "", errGiveUp
	}
	return key, text[i+1:], nil
}

// value parses what follows "key:" or "-": a scalar on the same line or a
// block on the next ones. parent is the indentation of the mapping or
// sequence holding the value; a mapping's value may be a sequence at the
// mapping's own indentation.
func (p *yamlParser) value(parent int, rest string, inMapping bool) (any, error) {
	rest = strings.TrimLeft(rest, " ")
	if rest == "" || rest[0] == '#' {
		p.skipBlank()
		if p.i < len(p.lines) {
			l := p.lines[p.i]
			if l.indent > parent {
				return p.block(l.indent)
			}
			if inMapping && l.indent == parent && isSeqItem(l.text) {
				return p.sequence(parent)
			}
		}
		return nil, nil
	}
	if rest[0] == '|' {
		return p.literal(parent, rest)
	}
	v, err := p.scalar(rest)
	if err != nil {
		return nil, err
	}
	// A more indented line after a scalar would continue it (a multi-line
	// plain scalar) or be an error: either way, not ours.
	p.skipBlank()
	if p.i < len(p.lines) && p.lines[p.i].indent > parent {
		return nil, errGiveUp
	}
	return v, nil
}

// scalar parses a one-line scalar or empty flow collection.
func (p *yamlParser) scalar(text string) (any, error) {
	switch text[0] {
	case '"', '\'':
		s, n, err := quoted(text)
		if err != nil {
			return nil, err
		}
		if !onlyComment(text[n:]) {
			return nil, errGiveUp
		}
		return s, nil
	case '[', '{':
		if strings.HasPrefix(text, "[]") && onlyComment(text[2:]) {
			return []any{}, nil
		}
		if strings.HasPrefix(text, "{}") && onlyComment(text[2:]) {
			return map[string]any{}, nil
		}
		return nil, errGiveUp
	}
	if !plainStart(text) {
		return nil, errGiveUp
	}
	if i := strings.Index(text, " #"); i >= 0 {
		text = strings.TrimRight(text[:i], " ")
	}
	if strings.Contains(text, ": ") || strings.HasSuffix(text, ":") {
		return nil, errGiveUp
	}
	return p.resolve(text)
}

// plainStart tells whether text may start a plain scalar in block context.
func plainStart(text string) bool {
	switch text[0] {
	case '-', '?', ':':
		return len(text) > 1 && text[1] != ' '
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

func onlyComment(s string) bool {
	t := strings.TrimLeft(s, " ")
	return t == "" || (t[0] == '#' && len(t) < len(s))
}

// resolveHint tells whether YAML 1.1 (yaml.v2's resolver) may read the
// plain scalar as something other than a string: the characters its
// resolver looks at before trying anything but a string.
func resolveHint(s string) bool {
	if s == "" {
		return true
	}
	return strings.IndexByte("+-0123456789yYnNtTfFoO~.", s[0]) >= 0
}

// surelyString tells, without asking the YAML library, that a plain
// scalar with a resolve hint is a string anyway: a word starting with a
// letter not in yaml11Words (scalar.go), or text with two dots (a version: no YAML 1.1 number or
// timestamp has two).
func surelyString(s string) bool {
	switch c := s[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return !yaml11Words[s]
	case c == '~':
		return s != "~"
	}
	return strings.Count(s, ".") >= 2
}

// resolve returns a plain scalar's value: a string, unless its first
// character lets YAML 1.1 read it otherwise; then sigs.k8s.io/yaml says.
func (p *yamlParser) resolve(s string) (any, error) {
	if !resolveHint(s) || surelyString(s) {
		return s, nil
	}
	if v, ok := p.scalars[s]; ok {
		return v, nil
	}
	j, err := sigsyaml.YAMLToJSON([]byte(s))
	if err != nil {
		return nil, errGiveUp
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, errGiveUp
	}
	switch v.(type) {
	case map[string]any, []any:
		return nil, errGiveUp
	}
	p.scalars[s] = v
	return v, nil
}

// quoted parses a single- or double-quoted scalar ending on its line and
// returns it and the length of its source.
func quoted(text string) (string, int, error) {
	q := text[0]
	var b strings.Builder
	for i := 1; i < len(text); i++ {
		c := text[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(text) && text[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), i + 1, nil
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 == len(text) {
				return "", 0, errGiveUp
			}
			i++
			n := 0
			switch text[i] {
			case '0':
				b.WriteByte(0)
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'v':
				b.WriteByte('\v')
			case 'f':
				b.WriteByte('\f')
			case 'r':
				b.WriteByte('\r')
			case 'e':
				b.WriteByte(0x1b)
			case ' ', '"', '\\':
				b.WriteByte(text[i])
			case 'x':
				n = 2
			case 'u':
				n = 4
			case 'U':
				n = 8
			default:
				return "", 0, errGiveUp
			}
			if n == 0 {
				continue
			}
			if i+n >= len(text) {
				return "", 0, errGiveUp
			}
			r, err := strconv.ParseUint(text[i+1:i+1+n], 16, 32)
			if err != nil || (r >= 0xd800 && r <= 0xdfff) || r > 0x10ffff {
				return "", 0, errGiveUp
			}
			b.WriteRune(rune(r))
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errGiveUp // continues on the next line
}

// literal parses a literal block scalar ("|" or "|-") whose header is
// text; its content is the following lines indented more than parent.
func (p *yamlParser) literal(parent int, text string) (any, error) {
	header := text[1:]
	strip := false
	if strings.HasPrefix(header, "-") {
		strip, header = true, header[1:]
	}
	if !onlyComment(header) {
		return nil, errGiveUp // keep chomping, an indentation indicator
	}
	start := p.i
	indent := -1
	var content []string
	blankRun := 0
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if l.text == "" {
			// Lines are right-trimmed: a line of spaces is an empty line,
			// unless it held content after the block's indentation.
			if indent < 0 && l.indent > 0 || indent >= 0 && l.indent > indent {
				return nil, errGiveUp
			}
			blankRun++
			continue
		}
		if indent < 0 {
			if l.indent <= parent {
				break
			}
			indent = l.indent
		}
		if l.indent < indent {
			break
		}
		for ; blankRun > 0; blankRun-- {
			content = append(content, "")
		}
		content = append(content, l.raw()[indent:])
	}
	if indent < 0 || p.i == start {
		return nil, errGiveUp
	}
	if p.i < len(p.lines) && p.lines[p.i].blank() && p.lines[p.i].text != "" && p.lines[p.i].indent > parent {
		return nil, errGiveUp // a comment inside the block's indentation
	}
	s := strings.Join(content, "\n")
	if !strip {
		s += "\n"
	}
	return s, nil
}
