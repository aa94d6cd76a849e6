package cli

import (
	"fmt"
	"slices"
	"strings"
)

// enumFlag is a flag whose value must be one of a fixed set, rejected when
// parsed rather than deep inside a command.
type enumFlag struct {
	value   string
	allowed []string
}

func newEnumFlag(def string, allowed ...string) *enumFlag {
	return &enumFlag{value: def, allowed: allowed}
}

func (f *enumFlag) String() string { return f.value }

func (f *enumFlag) Set(v string) error {
	if !slices.Contains(f.allowed, v) {
		return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
	}
	f.value = v
	return nil
}

func (f *enumFlag) Type() string { return "string" }

// outputFlag is the -o flag of commands that print text or structured data.
func outputFlag() *enumFlag { return newEnumFlag("text", "text", "json", "yaml") }
