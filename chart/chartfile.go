package chart

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// placeholder is a template placeholder ({{ ... }}) found in a Chart.yaml,
// which Helm reads as plain YAML and never renders.
type placeholder struct {
	// file names the Chart.yaml: a path, or an archive and the path inside it.
	file string
	line int
	text string
}

func (p placeholder) Error() string {
	return fmt.Sprintf("%s: line %d: %q is a template placeholder, but Helm reads Chart.yaml as plain YAML and never renders it: write the value itself (a release pipeline usually fills it in before packaging)",
		p.file, p.line, strings.TrimSpace(p.text))
}

// findPlaceholder looks for a template placeholder in the Chart.yaml of
// the chart at dir (a directory or a packaged .tgz) and of its subcharts
// under charts/, unpacked or packaged. It explains a loader error such as
// "invalid map key: map[interface {}]interface {}{".Version":...}", which
// names neither the file nor the line.
func findPlaceholder(dir string) (placeholder, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return placeholder{}, false
	}
	if !fi.IsDir() {
		return archivePlaceholder(dir)
	}
	var found placeholder
	ok := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ok || d.IsDir() {
			return nil
		}
		switch {
		case d.Name() == chartutil.ChartfileName:
			data, err := os.ReadFile(p)
			if err == nil {
				found, ok = placeholderIn(p, data)
			}
		case strings.HasSuffix(p, ".tgz") && filepath.Base(filepath.Dir(p)) == "charts":
			found, ok = archivePlaceholder(p)
		}
		return nil
	})
	return found, ok
}

// archivePlaceholder looks in the Chart.yaml files of a packaged chart
// (its own and its subcharts').
func archivePlaceholder(file string) (placeholder, bool) {
	f, err := os.Open(file)
	if err != nil {
		return placeholder{}, false
	}
	defer f.Close()
	files, err := archive.LoadArchiveFiles(f)
	if err != nil {
		return placeholder{}, false
	}
	return filesPlaceholder(file, files)
}

func filesPlaceholder(file string, files []*archive.BufferedFile) (placeholder, bool) {
	for _, bf := range files {
		where := file + " (" + bf.Name + ")"
		switch {
		case path.Base(bf.Name) == chartutil.ChartfileName:
			if p, ok := placeholderIn(where, bf.Data); ok {
				return p, true
			}
		case strings.HasSuffix(bf.Name, ".tgz"):
			inner, err := archive.LoadArchiveFiles(bytes.NewReader(bf.Data))
			if err != nil {
				continue
			}
			if p, ok := filesPlaceholder(where, inner); ok {
				return p, true
			}
		}
	}
	return placeholder{}, false
}

// placeholderIn finds where a Chart.yaml holds an unquoted template
// placeholder: a line YAML cannot parse that has "{{", or a map used as a
// key, which is what "{{ .Version }}" parses to. A quoted placeholder is a
// string, which Helm accepts.
func placeholderIn(file string, data []byte) (placeholder, bool) {
	lines := strings.Split(string(data), "\n")
	at := func(n int) (placeholder, bool) {
		if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], "{{") {
			return placeholder{}, false
		}
		return placeholder{file: file, line: n, text: lines[n-1]}, true
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		var n int
		if _, scanErr := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &n); scanErr == nil {
			if p, ok := at(n); ok {
				return p, true
			}
		}
		for i, l := range lines {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") && strings.Contains(l, "{{") {
				return at(i + 1)
			}
		}
		return placeholder{}, false
	}
	return at(complexKeyLine(&doc))
}

// complexKeyLine is the line of the first map or list used as a map key
// below n, 0 if none.
func complexKeyLine(n *yaml.Node) int {
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 && (c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode) {
			return c.Line
		}
		if l := complexKeyLine(c); l != 0 {
			return l
		}
	}
	return 0
}
