package fbc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// excerptLen is how much of a document an error quotes: enough to
// recognize it, never the kilobytes of an inline bundle.
const excerptLen = 80

// excerpt is the start of b, cut at excerptLen bytes (on a rune boundary)
// with "..." when longer.
func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) <= excerptLen {
		return s
	}
	cut := excerptLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// docError is an error about one document of a file; LoadBytes adds where
// the document starts.
type docError struct {
	// index is the document's position in the file, from 0.
	index int
	err   error
}

func (e *docError) Error() string { return e.err.Error() }
func (e *docError) Unwrap() error { return e.err }

// errNoSchema is the error for a document without a schema: declcfg's
// message quotes the whole document, which for a bundle is its manifests.
type errNoSchema struct{ blob []byte }

func (e errNoSchema) Error() string {
	return fmt.Sprintf("the document has no \"schema\" key (a truncated file?); it starts %s", excerpt(e.blob))
}

// locate says where in data the error err of loading it happened: the
// document (number and first line, for YAML) and, for a file that ends
// inside a JSON value, the offset where it ends.
func locate(data []byte, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the file ends inside a document at byte %d (line %d): is it truncated? (%w)", len(data), bytes.Count(data, []byte("\n"))+1, err)
	}
	var de *docError
	if !errors.As(err, &de) {
		return err
	}
	where := fmt.Sprintf("document %d", de.index+1)
	if !utilyaml.IsJSONBuffer(data) {
		if starts := yamlDocStarts(data); de.index < len(starts) {
			where += fmt.Sprintf(" (line %d)", starts[de.index])
		}
	}
	return fmt.Errorf("%s: %w", where, err)
}

// yamlDocStarts are the first lines (from 1) of the documents of a YAML
// stream as apimachinery's YAMLReader splits it: a line starting with
// "---" ends a document, and a document holds at least one line.
func yamlDocStarts(data []byte) []int {
	var starts []int
	start, lines := 1, 0
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if bytes.HasPrefix(line, []byte("---")) {
			if lines > 0 {
				starts = append(starts, start)
			}
			start, lines = i+2, 0
			continue
		}
		lines++
	}
	if lines > 0 && len(data) > 0 {
		starts = append(starts, start)
	}
	return starts
}
