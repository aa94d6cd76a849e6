package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// WarningsFile lists, in the project, every warning of the last init,
// create api or generate, each with its fix: the screen shows a kind with
// more than maxShown warnings as one line (a large chart has a hundred).
const WarningsFile = ".chartpilot/warnings.txt"

// maxShown is how many warnings of one kind the screen shows one by one.
const maxShown = 3

// warn prints a warning and keeps it for WarningsFile.
func (g *generator) warn(text string) {
	fmt.Fprintf(g.opts.Out, "warning: %s\n", text)
	g.warnings = append(g.warnings, text)
}

// schemaWarnings prints the warnings of chart's CRD by kind, and keeps
// each, with its fix, for WarningsFile.
func (g *generator) schemaWarnings(chart string, ws []crdschema.Warning) {
	var kinds []crdschema.WarningKind
	byKind := map[crdschema.WarningKind][]crdschema.Warning{}
	for _, w := range ws {
		if _, seen := byKind[w.Kind]; !seen {
			kinds = append(kinds, w.Kind)
		}
		byKind[w.Kind] = append(byKind[w.Kind], w)
		g.warnings = append(g.warnings, w.Text+"\n  fix: "+w.Kind.Fix())
	}
	for _, k := range kinds {
		list := byKind[k]
		if len(list) <= maxShown {
			for _, w := range list {
				fmt.Fprintf(g.opts.Out, "warning: %s\n", w.Text)
			}
			continue
		}
		places := make([]string, 0, maxShown)
		for _, w := range list[:maxShown] {
			places = append(places, w.At)
		}
		fmt.Fprintf(g.opts.Out, "warning: chart %s: %d %s: %s and %d more (%s lists each); %s\n",
			chart, len(list), k.Summary(), strings.Join(places, ", "), len(list)-maxShown, WarningsFile, k.Fix())
	}
}

// writeWarnings writes the warnings file with this run's warnings, or
// removes the last run's when there are none.
func (g *generator) writeWarnings() error {
	path := filepath.Join(g.dir, filepath.FromSlash(WarningsFile))
	if g.warningsFile != "" {
		path = g.warningsFile
	}
	if len(g.warnings) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	data := []byte(strings.Join(g.warnings, "\n") + "\n")
	if g.warningsFile != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return atomicfile.WriteFile(path, data, 0o644)
	}
	return g.writeFiles(map[string][]byte{WarningsFile: data})
}
