package fbc

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file holds yaml.v2's choice of a string's style: whether its
// encoder may write it unquoted (resolve.go) and whether its emitter
// accepts the style (emitterc.go, yaml_emitter_analyze_scalar).

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
