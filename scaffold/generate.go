package scaffold

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/operator/watches"
	"github.com/chartpilot/chartpilot/rbac"
)

// GenerateOptions configure Generate.
type GenerateOptions struct {
	// Dir is the project's directory. Required.
	Dir string
	// KubeVersion is the Kubernetes version the charts' APIs are checked
	// against (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Config, when set, resolves kinds through this cluster's discovery
	// (e.g. the resource names of CRDs the charts use but do not ship).
	Config *rest.Config
	// Out receives warnings (default io.Discard).
	Out io.Writer
	// WarningsFile: see Options.
	WarningsFile string
	// Values, when not nil, replace the values recorded for the chart of
	// Kind (ValuesFile): generate derives with them and records them.
	Values map[string]any
	// Kind names the API Values are for; it may be left out when the
	// project has one.
	Kind string
}

// Generate regenerates what a project derives from its charts after they
// changed: config/rbac's roles from every chart in watches.yaml (with its
// sample's values) and each CRD under config/crd/bases (with the versions
// PROJECT lists of its kind, see crdWithVersions; the backup kinds' CRDs
// with the same versions). Each file is
// replaced atomically. A project without config/shards (older than it)
// gets it; one whose role.yaml is a single ClusterRole (older than the
// split by scope) gets the RoleBinding of the Role and
// role_all_namespaces.yaml listed in config/rbac/kustomization.yaml.
func Generate(opts GenerateOptions) error {
	if opts.Dir == "" {
		return errors.New("generate: no project directory")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	g, err := openProject(opts.Dir, opts.KubeVersion, opts.Config, opts.Out)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	g.warningsFile = opts.WarningsFile
	var valuesFiles map[string][]byte
	if opts.Values != nil {
		if valuesFiles, err = g.replaceValues(opts.Kind, opts.Values); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
	}
	files, err := g.derived()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	maps.Copy(files, valuesFiles)
	shards, err := g.missingShardFiles()
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	maps.Copy(files, shards)
	if err := g.writeFiles(files); err != nil {
		return err
	}
	return g.writeWarnings()
}

// derived are the files a project derives from its charts: each CRD under
// config/crd/bases, config/rbac's roles (see rbacFiles) and the alerts and dashboard of
// config/prometheus (they follow the runtime's metrics and the kinds), by
// path relative to the project.
func (g *generator) derived() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, w := range g.watches {
		c, err := g.loadChart(w)
		if err != nil {
			return nil, err
		}
		rd := g.resourceData(w, c.Name())
		crd, err := g.chartCRD(c, rd, w)
		if err != nil {
			return nil, err
		}
		files[crdPath(rd.Group, rd.Plural)] = crd
		// The backup kinds follow the kind's versions.
		if g.hasBackupAPI(w, nil) {
			backups, err := g.backupCRDFiles(w)
			if err != nil {
				return nil, err
			}
			maps.Copy(files, backups)
		}
	}
	res, err := g.deriveRBAC(nil)
	if err != nil {
		return nil, err
	}
	rbacFiles, err := g.rbacFiles(res, nil)
	if err != nil {
		return nil, err
	}
	maps.Copy(files, rbacFiles)
	monitoring, err := g.monitoringFiles()
	if err != nil {
		return nil, err
	}
	maps.Copy(files, monitoring)
	return files, nil
}

// replaceValues makes values those of the chart of kind (the project's
// only kind when empty) for this run, and returns its new ValuesFile.
func (g *generator) replaceValues(kind string, values map[string]any) (map[string][]byte, error) {
	var kinds []string
	for _, w := range g.watches {
		kinds = append(kinds, w.Kind)
		if w.Kind != kind && (kind != "" || len(g.watches) != 1) {
			continue
		}
		data, err := valuesFile(w, values)
		if err != nil {
			return nil, err
		}
		g.values = map[string]map[string]any{ValuesFile(w): values}
		return map[string][]byte{ValuesFile(w): data}, nil
	}
	if kind == "" {
		return nil, fmt.Errorf("values given, but the project serves %d kinds (%s): name the one they are for with --kind", len(kinds), strings.Join(kinds, ", "))
	}
	return nil, fmt.Errorf("values given for kind %s, which the project does not serve (it serves %s)", kind, strings.Join(kinds, ", "))
}

// resourceData describes a watch's API for the templates.
func (g *generator) resourceData(w watches.Watch, chartName string) resourceData {
	return resourceData{Group: w.Group, Version: w.Version, Kind: w.Kind, Plural: crdschema.Plural(w.Kind),
		Lower: lower(w.Kind), Chart: chartName, ProjectName: g.project.ProjectName}
}

// openProject loads an existing project (PROJECT and watches.yaml) for a
// command that changes it.
func openProject(dir, kubeVersion string, config *rest.Config, out io.Writer) (*generator, error) {
	if kubeVersion == "" {
		kubeVersion = rbac.DefaultKubeVersion
	}
	proj, err := LoadProject(dir)
	if err != nil {
		return nil, err
	}
	ws, err := LoadWatches(dir)
	if err != nil {
		return nil, err
	}
	return &generator{dir: dir, project: proj, watches: ws, config: config,
		opts: Options{Domain: proj.Domain, ProjectName: proj.ProjectName, KubeVersion: kubeVersion, Out: out}}, nil
}
