package bundle

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// The registry+v1 bundle annotations (metadata/annotations.yaml and the
// bundle image's labels).
const (
	AnnotationMediaType       = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests       = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata        = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage         = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels        = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel  = "operators.operatorframework.io.bundle.channel.default.v1"
	AnnotationMetricsBuilder  = "operators.operatorframework.io.metrics.builder"
	AnnotationMetricsMedia    = "operators.operatorframework.io.metrics.mediatype.v1"
	AnnotationMetricsLayout   = "operators.operatorframework.io.metrics.project_layout"
	AnnotationTestMediaType   = "operators.operatorframework.io.test.mediatype.v1"
	AnnotationTestConfig      = "operators.operatorframework.io.test.config.v1"
	MediaTypeRegistryV1       = "registry+v1"
	MediaTypeMetricsV1        = "metrics+v1"
	MediaTypeScorecardV1      = "scorecard+v1"
	ManifestsDir              = "manifests"
	MetadataDir               = "metadata"
	ScorecardConfigDir        = "tests/scorecard"
	AnnotationsFile           = "metadata/annotations.yaml"
	ScorecardConfigFile       = "tests/scorecard/config.yaml"
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
		{AnnotationMediaType, MediaTypeRegistryV1},
		{AnnotationManifests, ManifestsDir + "/"},
		{AnnotationMetadata, MetadataDir + "/"},
		{AnnotationPackage, pkg},
		{AnnotationChannels, strings.Join(channels, ",")},
	}
	if defaultChannel != "" {
		ls = append(ls, Label{AnnotationDefaultChannel, defaultChannel})
	}
	ls = append(ls,
		Label{AnnotationMetricsBuilder, builder},
		Label{AnnotationMetricsMedia, MediaTypeMetricsV1},
		Label{AnnotationMetricsLayout, ProjectLayout},
	)
	if scorecard {
		ls = append(ls, Label{AnnotationTestMediaType, MediaTypeScorecardV1}, Label{AnnotationTestConfig, ScorecardConfigDir + "/"})
	}
	return ls
}

// annotationsYAML is metadata/annotations.yaml, keys in a fixed order.
func annotationsYAML(ls []Label) []byte {
	var b strings.Builder
	b.WriteString(annotationsFileHeaderNote)
	b.WriteString("annotations:\n")
	for _, l := range ls {
		v, _ := yaml.Marshal(l.Value) // a string always marshals
		fmt.Fprintf(&b, "  %s: %s", l.Key, v)
	}
	return []byte(b.String())
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
		fmt.Fprintf(&b, "LABEL %s=%s\n", l.Key, l.Value)
	}
	b.WriteString("\n")
	dirs := []string{ManifestsDir, MetadataDir}
	if scorecard {
		dirs = append(dirs, ScorecardConfigDir)
	}
	for _, d := range dirs {
		fmt.Fprintf(&b, "COPY %s /%s/\n", path.Join(filepath.ToSlash(bundleDir), d), d)
	}
	return []byte(b.String())
}

// ReadAnnotations reads metadata/annotations.yaml of a bundle directory.
func ReadAnnotations(bundleDir string) (map[string]string, error) {
	p := filepath.Join(bundleDir, AnnotationsFile)
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
