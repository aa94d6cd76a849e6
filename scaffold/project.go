package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/operator/backup"
	"github.com/chartpilot/chartpilot/operator/watches"
)

// ProjectFile is the name of the project file at the project's root.
const ProjectFile = "PROJECT"

// WatchesFile is the name of the runtime's watches file.
const WatchesFile = "watches.yaml"

// OperatorMakefile holds the operator's targets, which the Makefile includes.
const OperatorMakefile = "operator.mk"

// Where the operator image keeps its files: the Dockerfile init writes and
// the image `chartpilot image build` builds agree on them.
const (
	// OperatorHome is the runtime's working directory and HOME.
	OperatorHome = "/opt/helm"
	// OperatorBinary is the runtime binary in the operator image: a static
	// build of cmd/chartpilot-operator (whose mover command backups run).
	OperatorBinary = backup.MoverBinary
	// OperatorUser is the non-root user (and group) the operator runs as,
	// and its mover pods when the operand's pods name no user.
	OperatorUser = backup.DefaultMoverUser
)

// Project is the PROJECT file, in operator-sdk's (kubebuilder's) version 3 format.
type Project struct {
	Domain      string         `json:"domain"`
	Layout      []string       `json:"layout"`
	Plugins     map[string]any `json:"plugins,omitempty"`
	ProjectName string         `json:"projectName"`
	Resources   []Resource     `json:"resources,omitempty"`
	Version     string         `json:"version"`
}

// Resource is one API of the project.
type Resource struct {
	API     *ResourceAPI `json:"api,omitempty"`
	Domain  string       `json:"domain"`
	Group   string       `json:"group"`
	Kind    string       `json:"kind"`
	Version string       `json:"version"`
}

// ResourceAPI says how the resource's CRD is made.
type ResourceAPI struct {
	CRDVersion string `json:"crdVersion"`
	Namespaced bool   `json:"namespaced"`
}

// FullGroup is the API group: group.domain.
func (r Resource) FullGroup() string {
	if r.Group == "" {
		return r.Domain
	}
	return r.Group + "." + r.Domain
}

// helmLayout is operator-sdk's layout name for Helm projects.
const helmLayout = "helm.sdk.operatorframework.io/v1"

func newProject(name, domain string) *Project {
	return &Project{
		Domain:      domain,
		Layout:      []string{helmLayout},
		Plugins:     map[string]any{"manifests.sdk.operatorframework.io/v2": map[string]any{}, "scorecard.sdk.operatorframework.io/v2": map[string]any{}},
		ProjectName: name,
		Version:     "3",
	}
}

// LoadProject reads dir/PROJECT.
func LoadProject(dir string) (*Project, error) {
	p := filepath.Join(dir, ProjectFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading the project: %w", err)
	}
	var proj Project
	if err := yaml.Unmarshal(data, &proj); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if proj.Version != "3" {
		return nil, fmt.Errorf("%s: version %q, want \"3\"", p, proj.Version)
	}
	isHelm := false
	for _, l := range proj.Layout {
		isHelm = isHelm || l == helmLayout
	}
	if !isHelm {
		return nil, fmt.Errorf("%s: layout %v is not a Helm operator project (%s)", p, proj.Layout, helmLayout)
	}
	return &proj, nil
}

// LoadWatches reads dir/watches.yaml as the runtime reads it (package
// watches), without loading the charts: a file the runtime accepts is
// accepted here, and the other way round.
func LoadWatches(dir string) ([]watches.Watch, error) {
	p := filepath.Join(dir, WatchesFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading the watches: %w", err)
	}
	return watches.Decode(data, p)
}

// KindFromChartName is operator-sdk's default kind for a chart: its name in
// CamelCase ("my-web_app" -> "MyWebApp").
func KindFromChartName(name string) string {
	var b strings.Builder
	upper := true
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			b.WriteRune(unicode.ToUpper(r))
			upper = false
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
