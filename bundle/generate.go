package bundle

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/kustimage"
	"github.com/chartpilot/chartpilot/internal/registryv1"
	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// Errors of Generate that callers may want to tell apart.
var (
	// ErrInvalidVersion means the bundle version is not semver.
	ErrInvalidVersion = errors.New("invalid bundle version")
	// ErrOrphanSample means a sample's kind is owned by no CRD in the bundle.
	ErrOrphanSample = errors.New("sample of a kind no CRD in the bundle owns")
	// ErrCapabilityNotProven means the base CSV declares a capability level
	// the evidence does not support.
	ErrCapabilityNotProven = errors.New("declared capability level not proven")
)

// GenerateOptions configure Generate. Zero values are the defaults.
type GenerateOptions struct {
	// Dir is the project directory (default ".").
	Dir string
	// OutputDir is the bundle directory, relative to Dir unless absolute
	// (default "bundle"). bundle.Dockerfile is written in Dir.
	OutputDir string
	// Version is the operator's version, semver without a leading "v". Required.
	Version string
	// Package is the package name (default: the PROJECT's projectName).
	Package string
	// Channels are the bundle's channels (default: the existing bundle's,
	// else "alpha").
	Channels []string
	// DefaultChannel is the package's default channel (default: the
	// existing bundle's, else the only channel when there is one).
	DefaultChannel string
	// Images replace container images by name, as `kustomize edit set image`
	// does: "controller" -> "quay.io/me/op:v0.1.0".
	Images map[string]string
	// KubeVersion is the Kubernetes version the charts are rendered for when
	// the owned APIs' resources are derived (default rbac.DefaultKubeVersion).
	KubeVersion string
	// Replaces names the bundle this one replaces; it wins over FromCatalog.
	Replaces string
	// FromCatalog is a file-based catalog directory: the bundle replaces
	// the newest older version of its package in its channels there, and
	// skips every version from the oldest up to its own.
	FromCatalog string
	// UseImageDigests pins every image of the CSV to its digest, resolved
	// against its registry with the docker credentials.
	UseImageDigests bool
	// ScorecardResults is a scorecard results file (v1alpha3 TestList JSON)
	// used as evidence for the capability level.
	ScorecardResults string
	// ForceCapabilities writes the base CSV's declared capability level even
	// when the evidence does not support it.
	ForceCapabilities bool
	// CreatedAt fixes the CSV's createdAt (e.g. from SOURCE_DATE_EPOCH).
	// Nil keeps the existing bundle's createdAt when nothing else changed,
	// and uses the current time otherwise.
	CreatedAt *time.Time
	// Builder is written as the metrics builder annotation (default "chartpilot").
	Builder string
	// Out receives warnings (default io.Discard).
	Out io.Writer

	// now is the clock; tests replace it.
	now func() time.Time
}

func (o *GenerateOptions) defaults() error {
	o.Dir = cmp.Or(o.Dir, ".")
	o.OutputDir = cmp.Or(o.OutputDir, DefaultOutputDir)
	if !filepath.IsAbs(o.OutputDir) {
		o.OutputDir = filepath.Join(o.Dir, o.OutputDir)
	}
	o.KubeVersion = cmp.Or(o.KubeVersion, rbac.DefaultKubeVersion)
	o.Builder = cmp.Or(o.Builder, "chartpilot")
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.Version == "" {
		return fmt.Errorf("%w: no version (--version)", ErrInvalidVersion)
	}
	if _, err := registryv1.ParseVersion(o.Version); err != nil {
		return fmt.Errorf("%w: --version: %w", ErrInvalidVersion, err)
	}
	if err := checkNames(o); err != nil {
		return err
	}
	if o.DefaultChannel != "" && len(o.Channels) > 0 && !slices.Contains(o.Channels, o.DefaultChannel) {
		return fmt.Errorf("--default-channel %q is not one of --channels %s", o.DefaultChannel, strings.Join(o.Channels, ","))
	}
	return nil
}

// checkNames checks the package and channel names given by flags with the
// catalog's rules, which a catalog add of the bundle applies too.
func checkNames(o *GenerateOptions) error {
	if o.Package != "" {
		if err := registryv1.CheckPackageName(o.Package); err != nil {
			return fmt.Errorf("--package: %w", err)
		}
	}
	for _, ch := range o.Channels {
		if err := registryv1.CheckChannelName(ch); err != nil {
			return fmt.Errorf("--channels: %w", err)
		}
	}
	if o.DefaultChannel != "" {
		if err := registryv1.CheckChannelName(o.DefaultChannel); err != nil {
			return fmt.Errorf("--default-channel: %w", err)
		}
	}
	return nil
}

// GenerateResult says what Generate did.
type GenerateResult struct {
	// Dir is the bundle directory.
	Dir string `json:"dir"`
	// CSV is the ClusterServiceVersion's name.
	CSV string `json:"csv"`
	// Package, Channels and DefaultChannel are the bundle's metadata.
	Package        string   `json:"package"`
	Channels       []string `json:"channels"`
	DefaultChannel string   `json:"defaultChannel,omitempty"`
	// Replaces and SkipRange are the upgrade path the CSV declares.
	Replaces  string `json:"replaces,omitempty"`
	SkipRange string `json:"skipRange,omitempty"`
	// Capabilities is the level written, with its assessment.
	Capabilities string      `json:"capabilities"`
	Assessment   *Assessment `json:"assessment"`
	// Files are the bundle's files, relative to Dir.
	Files []string `json:"files"`
	// Unchanged is true when the bundle on disk already was this output.
	Unchanged bool `json:"unchanged"`
	// CreatedBase is true when a new base CSV was written.
	CreatedBase bool `json:"createdBase,omitempty"`
	// Images are the images the charts' renders name (relatedImages), each
	// with where it was found.
	Images []FoundImage `json:"images,omitempty"`
	// Warnings are findings that did not stop generation.
	Warnings []string `json:"warnings,omitempty"`
}

// Generate writes the project's registry+v1 bundle. The bundle directory
// is built aside and renamed into place: it holds the old bundle or the new
// one, never a mix. Files in metadata/ other than annotations.yaml (e.g.
// dependencies.yaml, properties.yaml) are kept.
func Generate(ctx context.Context, opts GenerateOptions) (*GenerateResult, error) {
	if err := opts.defaults(); err != nil {
		return nil, fmt.Errorf("bundle generate: %w", err)
	}
	g := &generation{opts: opts, res: &GenerateResult{Dir: opts.OutputDir}}
	if err := g.run(ctx); err != nil {
		return nil, fmt.Errorf("bundle generate: %w", err)
	}
	for _, w := range g.res.Warnings {
		fmt.Fprintln(opts.Out, "warning:", w)
	}
	return g.res, nil
}

// generation is one run of Generate.
type generation struct {
	opts    GenerateOptions
	res     *GenerateResult
	project *scaffold.Project
	// operandImages are the images the charts run.
	operandImages []FoundImage
	// elsewhere are the charts' namespaced objects in a namespace of their
	// own, which the namespaced install modes do not grant.
	elsewhere []string
}

func (g *generation) warn(format string, args ...any) {
	g.res.Warnings = append(g.res.Warnings, fmt.Sprintf(format, args...))
}

func (g *generation) run(ctx context.Context) error {
	proj, err := scaffold.LoadProject(g.opts.Dir)
	if err != nil {
		return err
	}
	g.project = proj
	pkg := cmp.Or(g.opts.Package, proj.ProjectName)
	if err := registryv1.CheckPackageName(pkg); err != nil {
		return fmt.Errorf("the package name is the project's name (%s projectName) unless --package gives one: %w", scaffold.ProjectFile, err)
	}
	g.res.Package = pkg
	basePath, err := g.ensureBaseCSV()
	if err != nil {
		return err
	}
	// config/manifests lists the base CSV: it is written first.
	m, err := loadManifests(g.opts.Dir)
	if err != nil {
		return err
	}
	csv, err := g.baseCSV(m, basePath)
	if err != nil {
		return err
	}
	consumed, err := g.fillCSV(ctx, csv, m, pkg)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	monitoring, err := g.manifestFiles(files, m, consumed)
	if err != nil {
		return err
	}
	scorecard, err := g.scorecardFile(files, m)
	if err != nil {
		return err
	}
	if err := g.capabilities(csv, monitoring); err != nil {
		return err
	}
	df, err := g.metadataFiles(files, pkg, scorecard)
	if err != nil {
		return err
	}
	if err := g.csvFile(files, csv, pkg); err != nil {
		return err
	}
	return g.write(files, df)
}

// ensureBaseCSV writes a new base CSV when the project has none, and returns
// its path.
func (g *generation) ensureBaseCSV() (string, error) {
	proj := g.project
	basePath := filepath.Join(g.opts.Dir, "config", "manifests", "bases", proj.ProjectName+".clusterserviceversion.yaml")
	if exists(basePath) {
		return basePath, nil
	}
	// What init writes, from what the first chart says about itself;
	// generic without one.
	data, warnings, err := scaffold.BaseCSV(g.opts.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if data, err = csvToYAML(baseCSV(proj.ProjectName, proj.Domain)); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	}
	for _, w := range warnings {
		g.warn("%s", w)
	}
	if err := atomicfile.WriteFile(basePath, data, 0o644); err != nil {
		return "", err
	}
	g.res.CreatedBase = true
	g.warn("wrote a new base CSV %s: check its description, provider, links, icon and maintainers", basePath)
	return basePath, nil
}

// baseCSV reads the project's base CSV without its version: the bundle's is
// --version's.
func (g *generation) baseCSV(m *projectManifests, basePath string) (*v1alpha1.ClusterServiceVersion, error) {
	base := m.csv
	if base == nil {
		g.warn("config/manifests does not list the base CSV; read %s directly", basePath)
		data, err := os.ReadFile(basePath)
		if err != nil {
			return nil, err
		}
		base = &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &base.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", basePath, err)
		}
	}
	// The version is --version's: one the base holds (operator-sdk's
	// bases may say 0.0.0, an edited one anything) is not read, so that it
	// cannot fail the CSV's lenient version parse with a message about
	// a version that is not used.
	base = base.DeepCopy()
	if v, ok, _ := unstructured.NestedFieldNoCopy(base.Object, "spec", "version"); ok && fmt.Sprint(v) != "0.0.0" && fmt.Sprint(v) != g.opts.Version {
		g.warn("the base CSV's spec.version %v is not used: the bundle's version is --version %s", v, g.opts.Version)
	}
	unstructured.RemoveNestedField(base.Object, "spec", "version")
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := fromUnstructured(base, csv); err != nil {
		return nil, fmt.Errorf("base CSV: %w", err)
	}
	return csv, nil
}

// fillCSV sets what the bundle generates in the CSV, the base's authored
// fields kept: install strategy, owned CRDs, images, upgrade path,
// annotations. It returns the project objects the install strategy took in.
func (g *generation) fillCSV(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, m *projectManifests, pkg string) (map[string]bool, error) {
	crds, err := typedCRDs(m.crds)
	if err != nil {
		return nil, err
	}
	if err := checkSamples(m.samples, crds); err != nil {
		return nil, err
	}
	images, err := withAliases(filepath.Join(g.opts.Dir, "config", "manifests"), g.opts.Images)
	if err != nil {
		return nil, err
	}
	strategy, consumed, err := installStrategy(m, images)
	if err != nil {
		return nil, err
	}
	warnings, err := checkAllNamespaces(m, strategy)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		g.warn("%s", w)
	}
	resources, err := g.chartResources(m.samples, crds)
	if err != nil {
		return nil, err
	}
	examples, err := almExamples(m.samples)
	if err != nil {
		return nil, err
	}
	v := semver.MustParse(g.opts.Version)
	csv.Name = pkg + ".v" + g.opts.Version
	csv.Spec.Version = version.OperatorVersion{Version: v}
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{StrategyName: v1alpha1.InstallStrategyNameDeployment, StrategySpec: strategy}
	csv.Spec.Description = describeExtras(csv.Spec.Description, strategyExtras(strategy))
	csv.Spec.CustomResourceDefinitions.Owned = ownedCRDs(crds, csv.Spec.CustomResourceDefinitions.Owned, resources)
	csv.Spec.RelatedImages = relatedImages(strategy, csv.Spec.RelatedImages)
	if len(csv.Spec.InstallModes) == 0 {
		csv.Spec.InstallModes = defaultInstallModes()
	}
	g.checkInstallModes(csv.Spec.InstallModes)
	csv.Spec.Icon = slices.DeleteFunc(csv.Spec.Icon, func(i v1alpha1.Icon) bool { return i.Data == "" })
	if csv.Spec.MinKubeVersion == "" {
		csv.Spec.MinKubeVersion = g.minKubeVersion()
	}
	replaces, skipRange, err := g.upgradePath(ctx, pkg, v)
	if err != nil {
		return nil, err
	}
	csv.Spec.Replaces = replaces
	g.res.Replaces, g.res.SkipRange = replaces, skipRange
	if csv.Annotations == nil {
		csv.Annotations = map[string]string{}
	}
	csv.Annotations[AnnotationALMExamples] = examples
	csv.Annotations[AnnotationBuilder] = g.opts.Builder
	csv.Annotations[AnnotationProjectLayout] = ProjectLayout
	if skipRange != "" {
		csv.Annotations[AnnotationSkipRange] = skipRange
	} else {
		delete(csv.Annotations, AnnotationSkipRange)
	}
	if g.opts.UseImageDigests {
		if err := pinDigests(ctx, csv); err != nil {
			return nil, err
		}
	}
	// The operand's images are listed as the charts name them: the charts,
	// not the CSV, decide what runs, so they are not pinned.
	csv.Spec.RelatedImages = addRelatedImages(csv.Spec.RelatedImages, g.operandImages)
	g.res.Images = g.operandImages
	csv.Annotations[AnnotationContainerImage] = containerImage(csv.Spec.InstallStrategy.StrategySpec)
	return consumed, nil
}

// monitoring is what the bundle ships for monitoring, as capability evidence.
type monitoring struct {
	metricsService, serviceMonitor, prometheusRule bool
}

// manifestFiles adds the CRDs and the objects OLM installs from a bundle
// that the install strategy did not take in.
func (g *generation) manifestFiles(files map[string][]byte, m *projectManifests, consumed map[string]bool) (monitoring, error) {
	var mon monitoring
	for _, o := range m.crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		if err := addObject(files, registryv1.ManifestsDir+"/"+group+"_"+plural+".yaml", o.DeepCopy()); err != nil {
			return mon, err
		}
	}
	extras := slices.Concat(m.others, m.roles, m.clusterRoles, m.roleBindings, m.clusterRoleBindings, m.serviceAccounts)
	for _, o := range extras {
		if consumed[objectID(o)] {
			continue
		}
		if !bundleKinds[o.GetKind()] {
			g.warn("%s: OLM does not install this kind from a bundle; it is left out", describe(o))
			continue
		}
		switch o.GetKind() {
		case kindService:
			mon.metricsService = mon.metricsService || strings.Contains(o.GetName(), "metrics")
		case kindServiceMonitor:
			mon.serviceMonitor = true
		case kindPrometheusRule:
			mon.prometheusRule = true
		}
		c := o.DeepCopy()
		c.SetNamespace("") // OLM installs into the operator's namespace
		if err := addObject(files, registryv1.ManifestsDir+"/"+manifestFileName(o), c); err != nil {
			return mon, err
		}
	}
	return mon, nil
}

// addObject adds an object's YAML under name, refusing a second one there.
func addObject(files map[string][]byte, name string, o *unstructured.Unstructured) error {
	if _, dup := files[name]; dup {
		return fmt.Errorf("two objects would be written to %s", name)
	}
	data, err := marshalObject(o.Object)
	if err != nil {
		return err
	}
	files[name] = data
	return nil
}

// scorecardFile adds the scorecard configuration, when the project has one.
func (g *generation) scorecardFile(files map[string][]byte, m *projectManifests) (bool, error) {
	if m.scorecard == nil {
		g.warn("no scorecard configuration (config/scorecard): the bundle carries no tests")
		return false, nil
	}
	data, err := marshalObject(m.scorecard.DeepCopy().Object)
	if err != nil {
		return false, err
	}
	files[registryv1.ScorecardConfigFile] = data
	return true, nil
}

// capabilities computes the capability level from the evidence; a higher
// level the base CSV declares is refused unless forced.
func (g *generation) capabilities(csv *v1alpha1.ClusterServiceVersion, mon monitoring) error {
	ev, err := g.evidence(csv, mon.metricsService, mon.serviceMonitor, mon.prometheusRule)
	if err != nil {
		return err
	}
	a := Assess(ev)
	g.res.Assessment = a
	level := a.Level
	if declared, ok := ParseLevel(csv.Annotations[AnnotationCapabilities]); ok && declared > a.Level {
		if !g.opts.ForceCapabilities {
			return fmt.Errorf("%w: the base CSV declares %q, the evidence proves %q (%s); run `chartpilot bundle capabilities` for what is missing, or pass --force-capabilities",
				ErrCapabilityNotProven, declared, a.Proven(), a.unmetSummary(a.nextUnmet()))
		}
		g.warn("capabilities forced to %q; the evidence proves %q", declared, a.Proven())
		level = declared
	}
	csv.Annotations[AnnotationCapabilities] = level.String()
	g.res.Capabilities = level.String()
	return nil
}

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

// csvFile adds the CSV, its createdAt fixed when asked, else kept when
// nothing else changed, else now.
func (g *generation) csvFile(files map[string][]byte, csv *v1alpha1.ClusterServiceVersion, pkg string) error {
	name := registryv1.ManifestsDir + "/" + pkg + ".clusterserviceversion.yaml"
	g.res.CSV = csv.Name
	render := func(createdAt string) error {
		csv.Annotations[AnnotationCreatedAt] = createdAt
		data, err := csvToYAML(csv)
		if err != nil {
			return err
		}
		files[name] = data
		return nil
	}
	now := func() string { return g.opts.now().UTC().Format(time.RFC3339) }
	switch prev := previousCreatedAt(g.opts.OutputDir, name); {
	case g.opts.CreatedAt != nil:
		return render(g.opts.CreatedAt.UTC().Format(time.RFC3339))
	case prev != "":
		if err := render(prev); err != nil || sameTree(g.opts.OutputDir, files) {
			return err
		}
		return render(now())
	default:
		return render(now())
	}
}

// write writes the bundle and bundle.Dockerfile where they changed.
func (g *generation) write(files map[string][]byte, df []byte) error {
	g.res.Files = sortedKeys(files)
	if sameTree(g.opts.OutputDir, files) {
		g.res.Unchanged = true
	} else if err := writeTree(g.opts.OutputDir, files); err != nil {
		return err
	}
	dfPath := filepath.Join(g.opts.Dir, DockerfileName)
	if old, err := os.ReadFile(dfPath); err != nil || !bytes.Equal(old, df) {
		if err := atomicfile.WriteFile(dfPath, df, 0o644); err != nil {
			return err
		}
		g.res.Unchanged = false
	}
	return nil
}

// typedCRDs converts the CRDs, refusing the removed v1beta1 API.
func typedCRDs(objs []*unstructured.Unstructured) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.GetAPIVersion() != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("%s: only apiextensions.k8s.io/v1 CRDs are served since Kubernetes 1.22", describe(o))
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := fromUnstructured(o, crd); err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	slices.SortFunc(crds, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	return crds, nil
}

// checkSamples makes sure each sample is an instance of a served version
// of a CRD in the bundle.
func checkSamples(samples []*unstructured.Unstructured, crds []*apiextensionsv1.CustomResourceDefinition) error {
	var errs []error
	for _, s := range samples {
		gvk := s.GroupVersionKind()
		ok := slices.ContainsFunc(crds, func(c *apiextensionsv1.CustomResourceDefinition) bool {
			return c.Spec.Group == gvk.Group && c.Spec.Names.Kind == gvk.Kind &&
				slices.ContainsFunc(c.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gvk.Version && v.Served })
		})
		if !ok {
			errs = append(errs, fmt.Errorf("%w: config/samples: %s", ErrOrphanSample, describe(s)))
		}
	}
	return errors.Join(errs...)
}

// chartResources derives, per owned kind ("group/Kind"), the kinds its
// chart creates, through package rbac's render of the chart with default
// and sample values.
func (g *generation) chartResources(samples []*unstructured.Unstructured, crds []*apiextensionsv1.CustomResourceDefinition) (map[string][]v1alpha1.APIResourceReference, error) {
	watches, err := scaffold.LoadWatches(g.opts.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	g.operandImages, g.elsewhere = nil, nil
	out := map[string][]v1alpha1.APIResourceReference{}
	for _, w := range watches {
		idx := slices.IndexFunc(crds, func(c *apiextensionsv1.CustomResourceDefinition) bool {
			return c.Spec.Group == w.Group && c.Spec.Names.Kind == w.Kind
		})
		if idx < 0 {
			g.warn("watches.yaml: %s/%s %s has no CRD in the bundle", w.Group, w.Version, w.Kind)
			continue
		}
		c, err := scaffold.LoadChart(g.opts.Dir, w)
		if err != nil {
			return nil, fmt.Errorf("watches.yaml %s: %w", w.Kind, err)
		}
		var values []map[string]any
		for _, s := range samples {
			if s.GroupVersionKind().Group == w.Group && s.GetKind() == w.Kind {
				if spec, ok := s.Object["spec"].(map[string]any); ok {
					values = append(values, spec)
				}
			}
		}
		r, err := rbac.Derive(rbac.Options{Chart: c, Owner: rbac.Owner{Group: w.Group, Resource: crds[idx].Spec.Names.Plural},
			SampleValues: values, KubeVersion: g.opts.KubeVersion})
		if err != nil {
			return nil, fmt.Errorf("rendering chart %s: %w", w.Chart, err)
		}
		if err := r.Err(); err != nil {
			return nil, err
		}
		g.operandImages = mergeImages(g.operandImages, operandImages(r.Renders))
		g.elsewhere = append(g.elsewhere, objectsElsewhere(r)...)
		crdGroups := map[string]bool{}
		for _, c := range crds {
			crdGroups[c.Spec.Group] = true
		}
		var refs []v1alpha1.APIResourceReference
		// Every kind the operator is granted, gated or found only by
		// scanning the templates included: the list says what a CR may create.
		for _, k := range r.Kinds {
			ref := v1alpha1.APIResourceReference{Kind: k.Kind, Version: k.Version}
			if crdGroups[k.Group] {
				ref.Name = k.Resource
			}
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
		out[w.Group+"/"+w.Kind] = refs
		watched := w.GroupVersionKind()
		for kind, creates := range map[string][]schema.GroupVersionKind{
			backupapi.BackupKind(watched).Kind:       backupapi.BackupCreates(),
			backupapi.RestoreKind(watched).Kind:      backupapi.RestoreCreates(watched),
			backupapi.ScheduleKind(watched).Kind:     backupapi.ScheduleCreates(watched),
			backupapi.RestoreGrantKind(watched).Kind: backupapi.RestoreGrantCreates(watched),
		} {
			var refs []v1alpha1.APIResourceReference
			for _, k := range creates {
				ref := v1alpha1.APIResourceReference{Kind: k.Kind, Version: k.Version}
				switch k {
				case watched:
					ref.Name = crds[idx].Spec.Names.Plural
				case backupapi.BackupKind(watched):
					ref.Name = backupapi.BackupResource(watched).Resource
				}
				refs = append(refs, ref)
			}
			out[w.Group+"/"+kind] = refs
		}
	}
	return out, nil
}

// checkInstallModes warns, when the CSV supports an install mode that
// grants the namespaced permissions only in the watched namespaces, about
// the charts' namespaced objects that go to a namespace of their own.
func (g *generation) checkInstallModes(modes []v1alpha1.InstallMode) {
	var narrow []string
	for _, m := range modes {
		if m.Supported && m.Type != v1alpha1.InstallModeTypeAllNamespaces {
			narrow = append(narrow, string(m.Type))
		}
	}
	if len(narrow) == 0 {
		return
	}
	for _, e := range g.elsewhere {
		g.warn("%s: in install modes %s OLM grants the operator's namespaced permissions only in the namespaces it watches, so such a release fails unless that namespace is one of them; keep the object in the release's namespace, or support only AllNamespaces in the base CSV's installModes",
			e, strings.Join(narrow, ", "))
	}
}

// objectsElsewhere lists the namespaced objects of a derivation's renders
// whose namespace is fixed by the chart (not the release's), once each.
func objectsElsewhere(r *rbac.Result) []string {
	namespaced := map[schema.GroupVersionKind]bool{}
	for _, k := range r.Kinds {
		namespaced[k.GroupVersionKind] = k.Namespaced
	}
	var out []string
	for _, rd := range r.Renders {
		for _, m := range rd.Objects {
			ns := m.Object.GetNamespace()
			if ns == "" || ns == metav1.NamespaceDefault || !namespaced[m.GroupVersionKind()] || isTestHook(m.Hook) {
				continue
			}
			line := fmt.Sprintf("%s: %s %s goes to namespace %q, not the custom resource's, in a render of the chart (its defaults, a sample's values or a value gate on)", m.Source, m.Object.GetKind(), m.Object.GetName(), ns)
			if !slices.Contains(out, line) {
				out = append(out, line)
			}
		}
	}
	return out
}

// withAliases adds to the images given by name every name the `images:`
// entries of the manifests' kustomizations rename them to: the image given
// wins over one set with `kustomize edit set image`.
func withAliases(manifestsDir string, images map[string]string) (map[string]string, error) {
	out := maps.Clone(images)
	for name, ref := range images {
		aliases, err := kustimage.Aliases(manifestsDir, name)
		if err != nil {
			return nil, err
		}
		for _, a := range aliases {
			if _, given := images[a]; !given {
				out[a] = ref
			}
		}
	}
	return out, nil
}

// minKubeVersion is the lowest Kubernetes version, from
// DefaultMinKubeVersion (what the runtime needs) up, that every chart's
// kubeVersion constraint allows. A constraint it cannot read, or that
// allows no such version, is warned about and left out.
func (g *generation) minKubeVersion() string {
	best := semver.MustParse(DefaultMinKubeVersion)
	watches, err := scaffold.LoadWatches(g.opts.Dir)
	if err != nil {
		return best.String()
	}
	constraints := map[string]string{}
	for _, w := range watches {
		c, err := chart.Load(filepath.Join(g.opts.Dir, w.Chart))
		if err == nil && c.Helm.Metadata.KubeVersion != "" {
			constraints[c.Name()] = c.Helm.Metadata.KubeVersion
		}
	}
	// Raising the version for one chart may leave a range another allows:
	// go on until all allow it (each round raises it, or ends).
	for round := 0; round <= len(constraints); round++ {
		raised := false
		for _, name := range sortedKeys(constraints) {
			kv := constraints[name]
			v, bounded, err := lowestKubeVersionFrom(kv, best)
			if err != nil {
				g.warn("chart %s: Chart.yaml kubeVersion %q: %v; minKubeVersion is not derived from it", name, kv, err)
				delete(constraints, name)
				continue
			}
			if bounded {
				best, raised = v, true
			}
		}
		if !raised {
			break
		}
	}
	return best.String()
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

// previousCreatedAt reads the createdAt of the bundle on disk.
func previousCreatedAt(bundleDir, csvFile string) string {
	data, err := os.ReadFile(filepath.Join(bundleDir, csvFile))
	if err != nil {
		return ""
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(data, &csv) != nil {
		return ""
	}
	return csv.Metadata.Annotations[AnnotationCreatedAt]
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

// sameTree reports whether dir holds exactly files.
func sameTree(dir string, files map[string][]byte) bool {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		want, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return errDiffers
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			return errDiffers
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

var errDiffers = errors.New("differs")

// writeTree replaces dir by a directory holding exactly files: written
// aside, then renamed into place.
func writeTree(dir string, files map[string][]byte) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := atomicfile.MkdirTemp(parent, "."+filepath.Base(dir)+".new-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	for name, data := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	old := ""
	if exists(dir) {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}
