package clidoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// IndexFile is the reference's first page: every command, as a tree.
const IndexFile = "README.md"

// Pages returns the reference of root's tree by file name: one page per
// command that is not hidden (chartpilot_catalog_add.md), and the index.
func Pages(root *cobra.Command) map[string][]byte {
	pages := map[string][]byte{}
	var index bytes.Buffer
	fmt.Fprintf(&index, "# Command reference\n\nGenerated from the commands themselves by `make docs`; a test fails when\nthis reference is stale.\n\n")
	walk(root, 0, func(cmd *cobra.Command, depth int) {
		fmt.Fprintf(&index, "%s- [%s](%s) — %s\n", strings.Repeat("  ", depth), cmd.CommandPath(), fileName(cmd), cmd.Short)
		pages[fileName(cmd)] = page(cmd)
	})
	pages[IndexFile] = index.Bytes()
	return pages
}

// Write replaces the Markdown files of dir with root's reference.
func Write(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	for name, data := range Pages(root) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// walk calls fn on cmd and the commands below it that are not hidden, in
// cobra's order (by name).
func walk(cmd *cobra.Command, depth int, fn func(*cobra.Command, int)) {
	if cmd.Hidden {
		return
	}
	fn(cmd, depth)
	for _, c := range cmd.Commands() {
		walk(c, depth+1, fn)
	}
}

func fileName(cmd *cobra.Command) string {
	return strings.ReplaceAll(cmd.CommandPath(), " ", "_") + ".md"
}

// page is one command's page: what it does, its usage, examples, flags,
// the commands below it and the one above.
func page(cmd *cobra.Command) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", cmd.CommandPath(), cmd.Short)
	if long := strings.TrimSpace(cmd.Long); long != "" {
		fmt.Fprintf(&b, "%s\n\n", escape(long))
	}
	if cmd.Runnable() {
		fmt.Fprintf(&b, "## Usage\n\n```\n%s\n```\n\n", cmd.UseLine())
	}
	if ex := strings.TrimRight(cmd.Example, "\n "); ex != "" {
		fmt.Fprintf(&b, "## Examples\n\n```sh\n%s\n```\n\n", ex)
	}
	if fl := flagUsages(cmd.NonInheritedFlags()); fl != "" {
		fmt.Fprintf(&b, "## Flags\n\n```\n%s```\n\n", fl)
	}
	if fl := flagUsages(cmd.InheritedFlags()); fl != "" {
		fmt.Fprintf(&b, "## Flags of the commands above\n\n```\n%s```\n\n", fl)
	}
	var subs []*cobra.Command
	for _, c := range cmd.Commands() {
		if !c.Hidden {
			subs = append(subs, c)
		}
	}
	if len(subs) > 0 {
		b.WriteString("## Commands\n\n")
		for _, c := range subs {
			fmt.Fprintf(&b, "- [%s](%s) — %s\n", c.CommandPath(), fileName(c), c.Short)
		}
		b.WriteString("\n")
	}
	if p := cmd.Parent(); p != nil {
		fmt.Fprintf(&b, "Part of [%s](%s); all commands: [the reference](%s).\n", p.CommandPath(), fileName(p), IndexFile)
	} else {
		fmt.Fprintf(&b, "All commands: [the reference](%s).\n", IndexFile)
	}
	return b.Bytes()
}

// flagUsages lists the flags of fs but help, which every command has.
func flagUsages(fs *pflag.FlagSet) string {
	shown := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden {
			shown.AddFlag(f)
		}
	})
	return shown.FlagUsages()
}

// escape keeps Markdown from reading <Kind> as an HTML tag.
func escape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}
