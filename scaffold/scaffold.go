package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/pull"
	"github.com/chartpilot/chartpilot/crdschema"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/operator/backup"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/watches"
	"github.com/chartpilot/chartpilot/rbac"
)

// ErrNotEmpty is returned when init's target directory holds files and
// Force is not set.
var ErrNotEmpty = errors.New("target directory is not empty")

// ErrAPIExists is returned by CreateAPI for a group/version/kind the
// project already has.
var ErrAPIExists = errors.New("API already exists")

//go:embed templates/*.tmpl
var templates embed.FS

// Defaults of operator-sdk's helm plugin.
const (
	DefaultDomain  = "example.com"
	DefaultGroup   = "charts"
	DefaultVersion = "v1alpha1"
)

// APIOptions say which chart becomes which kind.
type APIOptions struct {
	// Chart is the chart: a directory or a packaged .tgz, an oci:// reference
	// to a chart in an OCI registry, or with ChartRepo the chart's name in
	// that repository. Required.
	Chart string
	// ChartRepo is the URL of a Helm chart repository to pull Chart from.
	ChartRepo string
	// ChartVersion is the version (or semver constraint) to pull from
	// ChartRepo or the OCI registry (default: the latest).
	ChartVersion string
	// PlainHTTP reaches the OCI registry of an oci:// Chart over HTTP.
	PlainHTTP bool
	// Group is the API group's first label (default "charts"); the API
	// group is Group.Domain.
	Group string
	// Version is the API version (default "v1alpha1").
	Version string
	// Kind is the custom resource's kind (default: the chart's name in
	// CamelCase).
	Kind string
	// Values are values for the chart besides its values.yaml (--values,
	// --set): recorded under ValuesDir, merged over the defaults wherever
	// the chart is rendered, and in the sample CR.
	Values map[string]any
}

// Options configure Init.
type Options struct {
	APIOptions
	// Dir is the project directory to create. Required.
	Dir string
	// Domain is the API groups' domain (default "example.com").
	Domain string
	// ProjectName names the project (default: Dir's base name).
	ProjectName string
	// Force allows a non-empty Dir: the generated files replace what is
	// there, other files are kept.
	Force bool
	// KubeVersion is the Kubernetes version the chart's APIs are checked
	// against (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Out receives warnings (default io.Discard).
	Out io.Writer
	// WarningsFile lists every warning with its fix (default
	// WarningsFile in the project).
	WarningsFile string
	// ChartpilotVersion tags the runtime image in the Dockerfile (default "latest").
	ChartpilotVersion string
	// Config, when set, resolves the chart's kinds through this cluster's
	// discovery before the built-in Kubernetes 1.36 table.
	Config *rest.Config
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("init: no project directory")
	}
	if o.Chart == "" {
		return errors.New("init: no chart")
	}
	if o.Domain == "" {
		o.Domain = DefaultDomain
	}
	if o.ProjectName == "" {
		abs, err := filepath.Abs(o.Dir)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		o.ProjectName = filepath.Base(abs)
	}
	if !dnsLabel.MatchString(o.ProjectName) {
		return fmt.Errorf("init: project name %q is not a DNS label (lower-case letters, digits and '-')", o.ProjectName)
	}
	if o.KubeVersion == "" {
		o.KubeVersion = rbac.DefaultKubeVersion
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.ChartpilotVersion == "" {
		o.ChartpilotVersion = "latest"
	}
	return nil
}

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	kindRE   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	version  = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
)

func (a *APIOptions) defaults(chartName string) error {
	if a.Group == "" {
		a.Group = DefaultGroup
	}
	if a.Version == "" {
		a.Version = DefaultVersion
	}
	if a.Kind == "" {
		a.Kind = KindFromChartName(chartName)
	}
	if !dnsLabel.MatchString(a.Group) {
		return fmt.Errorf("group %q is not a DNS label", a.Group)
	}
	if !version.MatchString(a.Version) {
		return fmt.Errorf("version %q is not a Kubernetes API version (v1, v1alpha1, v2beta3...)", a.Version)
	}
	if !kindRE.MatchString(a.Kind) {
		return fmt.Errorf("kind %q must be CamelCase, starting with an upper-case letter", a.Kind)
	}
	return nil
}

// Init writes a new Helm operator project for a chart into opts.Dir. It
// builds the project in a temporary directory beside Dir and renames it into
// place: on error nothing is left behind. The chart is vendored into
// helm-charts/ with its file:// dependencies packaged under charts/.
//
// Removed Kubernetes APIs in the chart fail the init (the error wraps
// rbac.ErrRemovedAPI and names each template); deprecated APIs, guessed
// resource names and schema limits are warnings written to opts.Out.
func Init(opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	if err := checkTarget(opts.Dir, opts.Force); err != nil {
		return err
	}
	parent := filepath.Dir(filepath.Clean(opts.Dir))
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// The project root gets mkdir's mode (the umask applies), not MkdirTemp's 0o700.
	tmp, err := atomicfile.MkdirTemp(parent, "."+filepath.Base(opts.Dir)+".init-*")
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op once renamed

	proj := newProject(opts.ProjectName, opts.Domain)
	g := &generator{dir: tmp, staging: true, opts: opts, project: proj, config: opts.Config, warningsFile: opts.WarningsFile}
	if err := g.addAPI(opts.APIOptions); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := g.writeStatic(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := g.writeShared(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := g.writeWarnings(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return moveInto(tmp, opts.Dir)
}

// checkTarget refuses a non-empty directory unless forced.
func checkTarget(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("init: %w", err)
	case len(entries) > 0 && !force:
		return fmt.Errorf("init: %s: %w (%d entries; use --force to write into it)", dir, ErrNotEmpty, len(entries))
	}
	return nil
}

// moveInto puts the built project at dir: a rename when dir is absent or
// empty, else (forced) a rename of each top-level entry over the old one.
func moveInto(tmp, dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		if err == nil {
			if err := os.Remove(dir); err != nil {
				return fmt.Errorf("init: %w", err)
			}
		}
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		return nil
	}
	built, err := os.ReadDir(tmp)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, e := range built {
		dst := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := os.RemoveAll(dst); err != nil {
				return fmt.Errorf("init: replacing %s: %w", dst, err)
			}
		}
		if err := os.Rename(filepath.Join(tmp, e.Name()), dst); err != nil {
			return fmt.Errorf("init: replacing %s: %w", dst, err)
		}
	}
	return nil
}

// CreateAPIOptions configure CreateAPI.
type CreateAPIOptions struct {
	APIOptions
	// Dir is the existing project's directory. Required.
	Dir string
	// KubeVersion is the Kubernetes version the chart's APIs are checked
	// against (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Out receives warnings (default io.Discard).
	Out io.Writer
	// WarningsFile: see Options.
	WarningsFile string
	// Config, when set, resolves kinds through this cluster's discovery.
	Config *rest.Config
}

// CreateAPI adds a kind served by another chart to an existing project:
// the chart under helm-charts/, its CRD and sample, its watches.yaml entry
// and PROJECT resource, and RBAC regenerated for all the project's charts.
// Each file is replaced atomically; the new files are written before the
// shared ones (PROJECT, watches.yaml, role.yaml, kustomizations).
func CreateAPI(opts CreateAPIOptions) error {
	if opts.Dir == "" {
		return errors.New("create api: no project directory")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	g, err := openProject(opts.Dir, opts.KubeVersion, opts.Config, opts.Out)
	if err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	g.warningsFile = opts.WarningsFile
	i, err := g.existingKind(opts.APIOptions)
	if err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	switch {
	case i >= 0 && opts.Chart != "":
		w := g.watches[i]
		return fmt.Errorf("create api: kind %s of %s: %w, served by %s: to add API version %s of it, leave out --chart", w.Kind, w.Group, ErrAPIExists, w.Chart, opts.Version)
	case i >= 0 && len(opts.Values) > 0:
		return fmt.Errorf("create api: values are for a new kind's chart; those of %s are chartpilot generate --kind %s's", g.watches[i].Kind, g.watches[i].Kind)
	case i >= 0:
		err = g.addVersion(i, opts.Version)
	case opts.Chart == "":
		return errors.New("create api: no chart (--chart), and no kind of the project named (--kind) to add a version to")
	default:
		err = g.addAPI(opts.APIOptions)
	}
	if err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	if err := g.writeShared(); err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	if err := g.writeWarnings(); err != nil {
		return fmt.Errorf("create api: %w", err)
	}
	return nil
}

// resourceData is what templates know of one API.
type resourceData struct {
	Group, Version, Kind, Plural, Lower, Chart string
	ProjectName                                string
	// The resources of the kind's backups, restores and backup schedules.
	BackupPlural, RestorePlural, SchedulePlural, RestoreGrantPlural string
}

// generator writes a project's files.
type generator struct {
	dir string
	// staging says dir is Init's own directory, renamed into place whole
	// once written: no reader sees its files before, so they are written
	// directly, without a temporary file and an fsync each.
	staging bool
	opts    Options
	project *Project
	watches []watches.Watch
	// config, when set, resolves kinds through a cluster's discovery.
	config *rest.Config
	// values replace, by ValuesFile, the values recorded for a chart.
	values map[string]map[string]any
	// warnings are this run's, for warningsFile (default WarningsFile in
	// the project).
	warnings     []string
	warningsFile string
}

// loadChart loads a watch's chart with its values: those given to this
// command, else those recorded in the project.
func (g *generator) loadChart(w watches.Watch) (*chart.Chart, error) {
	if v, ok := g.values[ValuesFile(w)]; ok {
		c, err := chart.Load(filepath.Join(g.dir, w.Chart))
		if err != nil {
			return nil, err
		}
		c.Values = v
		return c, nil
	}
	return LoadChart(g.dir, w)
}

func (g *generator) resources() []resourceData {
	var out []resourceData
	for _, w := range g.watches {
		gvk := w.GroupVersionKind()
		out = append(out, resourceData{Group: w.Group, Version: w.Version, Kind: w.Kind, Plural: crdschema.Plural(w.Kind),
			Lower: strings.ToLower(w.Kind), Chart: filepath.Base(w.Chart), ProjectName: g.project.ProjectName,
			BackupPlural: backupapi.BackupResource(gvk).Resource, RestorePlural: backupapi.RestoreResource(gvk).Resource,
			SchedulePlural: backupapi.ScheduleResource(gvk).Resource, RestoreGrantPlural: backupapi.RestoreGrantResource(gvk).Resource})
	}
	return out
}

// addAPI vendors the chart and writes the API's own files: CRD, sample,
// editor and viewer roles; it records the API in the project and watches.
func (g *generator) addAPI(a APIOptions) error {
	path := a.Chart
	if a.ChartRepo != "" || chart.IsOCI(a.Chart) {
		scratch, err := os.MkdirTemp("", "chartpilot-chart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(scratch)
		if path, err = pull.Chart(pull.Options{RepoURL: a.ChartRepo, Name: a.Chart, Version: a.ChartVersion, PlainHTTP: a.PlainHTTP, Dest: scratch}); err != nil {
			return err
		}
	}
	c, err := chart.Load(path)
	if err != nil {
		return err
	}
	c.Values = a.Values
	if err := a.defaults(c.Name()); err != nil {
		return err
	}
	res := Resource{API: &ResourceAPI{CRDVersion: "v1", Namespaced: true}, Domain: g.project.Domain, Group: a.Group, Kind: a.Kind, Version: a.Version}
	for _, r := range g.project.Resources {
		if r.FullGroup() == res.FullGroup() && r.Version == res.Version && r.Kind == res.Kind {
			return fmt.Errorf("%s/%s %s: %w", res.FullGroup(), res.Version, res.Kind, ErrAPIExists)
		}
	}
	chartsDir := filepath.Join(g.dir, "helm-charts")
	if _, err := os.Stat(filepath.Join(chartsDir, c.Name())); err == nil {
		return fmt.Errorf("helm-charts/%s already exists", c.Name())
	}
	if err := os.MkdirAll(chartsDir, 0o755); err != nil {
		return err
	}
	if _, err := c.Vendor(chartsDir); err != nil {
		return err
	}
	g.project.Resources = append(g.project.Resources, res)
	w := watches.Watch{Group: res.FullGroup(), Version: res.Version, Kind: res.Kind, Chart: "helm-charts/" + c.Name()}
	g.watches = append(g.watches, w)
	rd := resourceData{Group: res.FullGroup(), Version: res.Version, Kind: res.Kind, Plural: crdschema.Plural(res.Kind),
		Lower: strings.ToLower(res.Kind), Chart: c.Name(), ProjectName: g.project.ProjectName}

	crdYAML, err := g.crdYAML(c, rd)
	if err != nil {
		return err
	}
	editor, err := render("config_rbac_editor_role.yaml.tmpl", rd)
	if err != nil {
		return err
	}
	viewer, err := render("config_rbac_viewer_role.yaml.tmpl", rd)
	if err != nil {
		return err
	}
	sample, err := sampleCR(c, rd)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"config/crd/bases/" + rd.Group + "_" + rd.Plural + ".yaml":                 crdYAML,
		"config/samples/" + rd.Group + "_" + rd.Version + "_" + rd.Lower + ".yaml": sample,
		"config/rbac/" + rd.Lower + "_editor_role.yaml":                            editor,
		"config/rbac/" + rd.Lower + "_viewer_role.yaml":                            viewer,
	}
	if len(a.Values) > 0 {
		if files[ValuesFile(w)], err = valuesFile(w, a.Values); err != nil {
			return err
		}
	}
	return g.writeFiles(files)
}

// crdYAML is the CRD of a new API, as config/crd/bases holds it.
func (g *generator) crdYAML(c *chart.Chart, rd resourceData) ([]byte, error) {
	crd, err := g.crdFor(c, rd)
	if err != nil {
		return nil, err
	}
	return marshalCRD(crd)
}

// crdFor is the CRD of an API with the one version rd names, its schema
// from the chart; warnings go to the output.
func (g *generator) crdFor(c *chart.Chart, rd resourceData) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, warnings, err := crdschema.CRD(c, crdschema.Options{Group: rd.Group, Version: rd.Version, Kind: rd.Kind, Plural: rd.Plural})
	if err != nil {
		return nil, err
	}
	g.schemaWarnings(c.Name(), warnings)
	return crd, nil
}

func lower(s string) string { return strings.ToLower(s) }

// staticFiles are the files written once by init, from templates of the
// same name ("/" in the path is "_" in the template name).
var staticFiles = map[string]string{
	"Dockerfile":                                       "Dockerfile.tmpl",
	"Makefile":                                         "Makefile.tmpl",
	OperatorMakefile:                                   "operator.mk.tmpl",
	".gitignore":                                       "gitignore.tmpl",
	".dockerignore":                                    "dockerignore.tmpl",
	"config/default/kustomization.yaml":                "config_default_kustomization.yaml.tmpl",
	"config/default/metrics_service.yaml":              "config_default_metrics_service.yaml.tmpl",
	"config/manager/kustomization.yaml":                "config_manager_kustomization.yaml.tmpl",
	"config/manager/manager.yaml":                      "config_manager_manager.yaml.tmpl",
	"config/rbac/role_binding.yaml":                    "config_rbac_role_binding.yaml.tmpl",
	"config/rbac/service_account.yaml":                 "config_rbac_service_account.yaml.tmpl",
	"config/scorecard/kustomization.yaml":              "config_scorecard_kustomization.yaml.tmpl",
	"config/scorecard/bases/config.yaml":               "config_scorecard_bases_config.yaml.tmpl",
	"config/scorecard/patches/basic.config.yaml":       "config_scorecard_patches_basic.config.yaml.tmpl",
	"config/scorecard/patches/olm.config.yaml":         "config_scorecard_patches_olm.config.yaml.tmpl",
	"config/scorecard/patches/chartpilot.config.yaml":  "config_scorecard_patches_chartpilot.config.yaml.tmpl",
	"config/manifests/kustomization.yaml":              "config_manifests_kustomization.yaml.tmpl",
	"config/prometheus/kustomization.yaml":             "config_prometheus_kustomization.yaml.tmpl",
	"config/prometheus/monitor.yaml":                   "config_prometheus_monitor.yaml.tmpl",
	"config/prometheus/monitor_service_ca_patch.yaml":  "config_prometheus_monitor_service_ca_patch.yaml.tmpl",
	"config/default/service_ca_patch.yaml":             "config_default_service_ca_patch.yaml.tmpl",
	"config/service-ca/kustomization.yaml":             "config_service-ca_kustomization.yaml.tmpl",
	"config/service-ca/metrics_service_ca.yaml":        "config_service-ca_metrics_service_ca.yaml.tmpl",
	"config/default/cert_metrics_manager_patch.yaml":   "config_default_cert_metrics_manager_patch.yaml.tmpl",
	"config/certmanager/kustomization.yaml":            "config_certmanager_kustomization.yaml.tmpl",
	"config/certmanager/issuer.yaml":                   "config_certmanager_issuer.yaml.tmpl",
	"config/certmanager/certificate-metrics.yaml":      "config_certmanager_certificate-metrics.yaml.tmpl",
	"config/network-policy/kustomization.yaml":         "config_network-policy_kustomization.yaml.tmpl",
	"config/network-policy/allow-metrics-traffic.yaml": "config_network-policy_allow-metrics-traffic.yaml.tmpl",
}

// sharedFiles depend on the project's list of APIs and are rewritten by
// create api.
var sharedFiles = map[string]string{
	"config/crd/kustomization.yaml":     "config_crd_kustomization.yaml.tmpl",
	"config/samples/kustomization.yaml": "config_samples_kustomization.yaml.tmpl",
	"config/rbac/kustomization.yaml":    "config_rbac_kustomization.yaml.tmpl",
}

type projectData struct {
	ProjectName, Domain, KubeVersion, ChartpilotVersion, Description, OperatorMakefile string
	Resources                                                                          []resourceData
	// The operator image's layout, for the Dockerfile.
	OperatorHome, OperatorBinary, WatchesFile string
	OperatorUser                              int
	// The downward-API variables the runtime finds its image with.
	PodNameEnv, PodNamespaceEnv string
}

func (g *generator) data() projectData {
	var charts []string
	for _, r := range g.resources() {
		charts = append(charts, r.Chart)
	}
	return projectData{ProjectName: g.project.ProjectName, Domain: g.project.Domain, KubeVersion: g.opts.KubeVersion,
		ChartpilotVersion: g.opts.ChartpilotVersion, Resources: g.resources(),
		OperatorHome: OperatorHome, OperatorBinary: OperatorBinary, WatchesFile: WatchesFile, OperatorUser: OperatorUser,
		OperatorMakefile: OperatorMakefile, PodNameEnv: backup.PodNameEnv, PodNamespaceEnv: backup.PodNamespaceEnv,
		Description: fmt.Sprintf("%s runs the Helm chart(s) %s as an operator.", g.project.ProjectName, strings.Join(charts, ", "))}
}

func (g *generator) writeStatic() error {
	files := map[string][]byte{}
	d := g.data()
	for path, tmpl := range staticFiles {
		out, err := render(tmpl, d)
		if err != nil {
			return err
		}
		files[path] = out
	}
	c, err := chart.Load(filepath.Join(g.dir, g.watches[0].Chart))
	if err != nil {
		return err
	}
	csv, warnings, err := g.baseCSV(c)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		g.warn(w)
	}
	files[BaseCSVFile(g.project.ProjectName)] = csv
	shards, err := g.shardFiles()
	if err != nil {
		return err
	}
	maps.Copy(files, shards)
	return g.writeFiles(files)
}

// writeShared writes the files that list every API: kustomizations,
// config/rbac (RBAC derived from every chart), the alerts and dashboard of
// config/prometheus, watches.yaml and PROJECT, last.
func (g *generator) writeShared() error {
	files := map[string][]byte{}
	d := g.data()
	for path, tmpl := range sharedFiles {
		out, err := render(tmpl, d)
		if err != nil {
			return err
		}
		files[path] = out
	}
	backupCRDs, err := g.backupCRDs()
	if err != nil {
		return err
	}
	maps.Copy(files, backupCRDs)
	res, err := g.deriveRBAC(files)
	if err != nil {
		return err
	}
	rbacFiles, err := g.rbacFiles(res, files)
	if err != nil {
		return err
	}
	maps.Copy(files, rbacFiles)
	monitoring, err := g.monitoringFiles()
	if err != nil {
		return err
	}
	maps.Copy(files, monitoring)
	if err := g.writeFiles(files); err != nil {
		return err
	}
	watches, err := marshalWatches(g.watches)
	if err != nil {
		return err
	}
	proj, err := yaml.Marshal(g.project)
	if err != nil {
		return err
	}
	proj = append([]byte("# Code generated by chartpilot. DO NOT EDIT.\n# This file is used to track the info used to scaffold your project\n# and allow the plugins properly work.\n# More info: https://book.kubebuilder.io/reference/project-config.html\n"), proj...)
	return g.writeFiles(map[string][]byte{WatchesFile: watches, ProjectFile: proj})
}

// backupCRDs are the CRDs of every API's backup and restore kinds, as
// package backup/api defines them, for config/crd/bases.
func (g *generator) backupCRDs() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, w := range g.watches {
		crds, err := g.backupCRDFiles(w)
		if err != nil {
			return nil, err
		}
		maps.Copy(files, crds)
		// Samples are the user's once written: only missing ones are.
		lower := strings.ToLower(w.Kind)
		source := lower + "-sample"
		for suffix, sample := range map[string]map[string]any{
			"backup":         backupapi.BackupSample(w.GroupVersionKind(), source),
			"restore":        backupapi.RestoreSample(w.GroupVersionKind(), source),
			"backupschedule": backupapi.ScheduleSample(w.GroupVersionKind(), source),
			"restoregrant":   backupapi.RestoreGrantSample(w.GroupVersionKind()),
		} {
			path := "config/samples/" + w.Group + "_" + w.Version + "_" + lower + suffix + ".yaml"
			if _, err := os.Stat(filepath.Join(g.dir, filepath.FromSlash(path))); err == nil {
				continue
			}
			out, err := yaml.Marshal(sample)
			if err != nil {
				return nil, err
			}
			files[path] = out
		}
	}
	return files, nil
}

// backupCRDFiles are the CRD files of w's backup kinds, with every
// version of w's kind.
func (g *generator) backupCRDFiles(w watches.Watch) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, crd := range backupapi.CRDs(w.GroupVersionKind()) {
		out, err := yaml.Marshal(withVersions(crd, g.versionsOf(w)))
		if err != nil {
			return nil, fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		files[backupCRDPath(crd.Spec.Group, crd.Spec.Names.Plural)] = out
	}
	return files, nil
}

// deriveRBAC derives the RBAC of every chart the project serves, each with
// the values of its sample CR, merged: namespaced rules in a Role, the
// others in a ClusterRole. A kind's backup rules are granted only when the
// project has its backup API (its CRD under config/crd/bases, on disk or
// in pending): adopted operator-sdk projects do not.
func (g *generator) deriveRBAC(pending map[string][]byte) (*rbac.Result, error) {
	var results []*rbac.Result
	for _, w := range g.watches {
		c, err := g.loadChart(w)
		if err != nil {
			return nil, err
		}
		lower := strings.ToLower(w.Kind)
		// chartpilot names samples by the full group, operator-sdk by its
		// first label.
		sample := filepath.Join(g.dir, "config", "samples", w.Group+"_"+w.Version+"_"+lower+".yaml")
		if _, err := os.Stat(sample); err != nil {
			short, _, _ := strings.Cut(w.Group, ".")
			sample = filepath.Join(g.dir, "config", "samples", short+"_"+w.Version+"_"+lower+".yaml")
		}
		var samples []map[string]any
		if data, err := os.ReadFile(sample); err == nil {
			var obj struct {
				Spec map[string]any `json:"spec"`
			}
			if err := yaml.Unmarshal(data, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", sample, err)
			}
			samples = append(samples, obj.Spec)
		}
		res, err := rbac.Derive(rbac.Options{Chart: c, Owner: rbac.Owner{Group: w.Group, Resource: crdschema.Plural(w.Kind), Kind: w.Kind},
			Backup: g.hasBackupAPI(w, pending), BackupHooks: w.BackupHooks, MigrateStorage: g.migratedCRDs(w, pending), WatchNamespace: rbacNamespace, Name: managerRole,
			SampleValues: samples, KubeVersion: g.opts.KubeVersion, Config: g.config})
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
		}
		for _, w := range res.Warnings {
			g.warn(w.String())
		}
		results = append(results, res)
	}
	return rbac.Merge(results...), nil
}

// hasBackupAPI says whether the project has the backup kind of w's API.
func (g *generator) hasBackupAPI(w watches.Watch, pending map[string][]byte) bool {
	path := backupCRDPath(w.Group, backupapi.BackupResource(w.GroupVersionKind()).Resource)
	if _, ok := pending[path]; ok {
		return true
	}
	_, err := os.Stat(filepath.Join(g.dir, filepath.FromSlash(path)))
	return err == nil
}

// backupCRDPath is where a backup kind's CRD is in config/crd/bases.
func backupCRDPath(group, plural string) string {
	return "config/crd/bases/" + group + "_" + plural + ".yaml"
}

// marshalWatches writes watches.yaml with a comment on the runtime's options.
func marshalWatches(ws []watches.Watch) ([]byte, error) {
	out, err := yaml.Marshal(ws)
	if err != nil {
		return nil, err
	}
	head := `# The custom resources the operator watches and the chart each one installs.
# Per entry, besides group, version, kind and chart:
#   watchDependentResources: false   do not re-reconcile when a release's objects change
#   overrideValues: {key: value}     values that win over the CR's spec ($ENV expanded)
#   reconcilePeriod: 1m              reconcile this often even without events
#   maxConcurrentReconciles: 2       parallel reconciles of this kind
#   selector: {matchLabels: {...}}   only CRs with these labels
#   dryRunOption: server             how a change is tried first: none, client (default) or server
#   healthDeadline: 5m               a new revision not healthy by then is rolled back (0s: never)
#   backupHooks: true                grant pods/exec for Velero hooks the CRs add through values
`
	return append([]byte(head), out...), nil
}

func render(name string, data any) ([]byte, error) {
	t, err := template.New(name).Option("missingkey=error").ParseFS(templates, "templates/"+name)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// writeFiles writes files under g.dir in a stable order: atomically into
// an existing project, directly into Init's staging directory.
func (g *generator) writeFiles(files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	write := atomicfile.WriteFile
	if g.staging {
		write = writeStaged
	}
	for _, p := range paths {
		if err := write(filepath.Join(g.dir, filepath.FromSlash(p)), files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeStaged writes a file of a directory no one reads yet, creating its
// parent directories.
func writeStaged(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
