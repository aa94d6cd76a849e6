package bundle

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// What chartpilot names and defaults in a bundle beyond the format's own
// (package registryv1).
const (
	DockerfileName            = "bundle.Dockerfile"
	DefaultChannel            = "alpha"
	DefaultOutputDir          = "bundle"
	annotationsFileHeaderNote = "# The bundle's format, package and channels, as OLM and opm read them.\n"
)

// Label is one annotation of a bundle, in the order it is written.
type Label struct{ Key, Value string }

// metadataLabels are the bundle's annotations in operator-sdk's order.
func metadataLabels(pkg string, channels []string, defaultChannel, builder string, scorecard bool) []Label {
	ls := []Label{
		{registryv1.AnnotationMediaType, registryv1.MediaTypeRegistryV1},
		{registryv1.AnnotationManifests, registryv1.ManifestsDir + "/"},
		{registryv1.AnnotationMetadata, registryv1.MetadataDir + "/"},
		{registryv1.AnnotationPackage, pkg},
		{registryv1.AnnotationChannels, strings.Join(channels, ",")},
	}
	if defaultChannel != "" {
		ls = append(ls, Label{registryv1.AnnotationDefaultChannel, defaultChannel})
	}
	ls = append(ls,
		Label{registryv1.AnnotationMetricsBuilder, builder},
		Label{registryv1.AnnotationMetricsMedia, registryv1.MediaTypeMetricsV1},
		Label{registryv1.AnnotationMetricsLayout, ProjectLayout},
	)
	if scorecard {
		ls = append(ls, Label{registryv1.AnnotationTestMediaType, registryv1.MediaTypeScorecardV1}, Label{registryv1.AnnotationTestConfig, registryv1.ScorecardConfigDir + "/"})
	}
	return ls
}

// annotationsYAML is metadata/annotations.yaml, keys in a fixed order.
func annotationsYAML(ls []Label) []byte {
	var b strings.Builder
	b.WriteString(annotationsFileHeaderNote)
	b.WriteString("annotations:\n")
	for _, l := range ls {
		fmt.Fprintf(&b, "  %s: %s\n", l.Key, yamlString(l.Value))
	}
	return []byte(b.String())
}

// yamlString is s as a one-line YAML scalar that reads back as s: as
// yaml.Marshal writes it where that does (yaml.Marshal writes a block
// scalar for several lines and some control characters raw), else
// double-quoted with Go's escapes, which YAML's double-quoted style shares
// (\n, \t, \x7f, \u2028...).
func yamlString(s string) string {
	v, _ := yaml.Marshal(s) // a string always marshals
	out := strings.TrimSuffix(string(v), "\n")
	var back string
	if !strings.Contains(out, "\n") && yaml.Unmarshal(v, &back) == nil && back == s {
		return out
	}
	return strconv.Quote(s)
}

// dockerfile is bundle.Dockerfile for docker and podman users; `chartpilot
// bundle build` makes the same image without a container engine. bundleDir
// is the bundle directory relative to the project root.
func dockerfile(ls []Label, bundleDir string, scorecard bool) []byte {
	var b strings.Builder
	b.WriteString("# The bundle image, for docker and podman users; `chartpilot bundle build`\n")
	b.WriteString("# builds the same image without a container engine. Generated: do not edit.\n")
	b.WriteString("FROM scratch\n\n")
	for _, l := range ls {
		fmt.Fprintf(&b, "LABEL %s=%s\n", l.Key, dockerQuote(l.Value))
	}
	b.WriteString("\n")
	dirs := []string{registryv1.ManifestsDir, registryv1.MetadataDir}
	if scorecard {
		dirs = append(dirs, registryv1.ScorecardConfigDir)
	}
	for _, d := range dirs {
		fmt.Fprintf(&b, "COPY %s /%s/\n", path.Join(filepath.ToSlash(bundleDir), d), d)
	}
	return []byte(b.String())
}

// dockerQuote is s as a double-quoted Dockerfile word that reads back as s:
// unquoted, a space ends the value and $ expands a build variable. Label
// values are one line (names, media types, paths).
func dockerQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`).Replace(s) + `"`
}

// ReadAnnotations reads metadata/annotations.yaml of a bundle directory.
func ReadAnnotations(bundleDir string) (map[string]string, error) {
	p := filepath.Join(bundleDir, registryv1.AnnotationsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var f struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return f.Annotations, nil
}

func yamlMarshal(v any) ([]byte, error) { return yaml.Marshal(v) }

// metadataFiles adds metadata/annotations.yaml (and keeps other metadata
// files the bundle had) and returns bundle.Dockerfile's content.
func (g *generation) metadataFiles(files map[string][]byte, pkg string, scorecard bool) ([]byte, error) {
	channels, defaultChannel := g.channels()
	g.res.Channels, g.res.DefaultChannel = channels, defaultChannel
	labels := metadataLabels(pkg, channels, defaultChannel, g.opts.Builder, scorecard)
	files[registryv1.AnnotationsFile] = annotationsYAML(labels)
	if err := keepMetadataExtras(g.opts.OutputDir, files); err != nil {
		return nil, err
	}
	relBundle, err := filepath.Rel(g.opts.Dir, g.opts.OutputDir)
	if err != nil || !filepath.IsLocal(relBundle) {
		relBundle = g.opts.OutputDir
	}
	return dockerfile(labels, relBundle, scorecard), nil
}

// channels are the flags', else the existing bundle's, else "alpha".
func (g *generation) channels() ([]string, string) {
	prev, _ := ReadAnnotations(g.opts.OutputDir)
	channels := g.opts.Channels
	if len(channels) == 0 && prev[registryv1.AnnotationChannels] != "" {
		channels = strings.Split(prev[registryv1.AnnotationChannels], ",")
	}
	if len(channels) == 0 {
		channels = []string{DefaultChannel}
	}
	def := g.opts.DefaultChannel
	if def == "" && slices.Contains(channels, prev[registryv1.AnnotationDefaultChannel]) {
		def = prev[registryv1.AnnotationDefaultChannel]
	}
	if def == "" && len(channels) == 1 {
		def = channels[0]
	}
	return channels, def
}

// keepMetadataExtras adds the existing bundle's other metadata files.
func keepMetadataExtras(bundleDir string, files map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(bundleDir, registryv1.MetadataDir))
	if err != nil {
		return nil // no previous bundle
	}
	for _, e := range entries {
		name := registryv1.MetadataDir + "/" + e.Name()
		if e.IsDir() || files[name] != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(bundleDir, name))
		if err != nil {
			return err
		}
		files[name] = data
	}
	return nil
}
