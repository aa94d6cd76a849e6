package bundle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	valerrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/promrule"
	"github.com/chartpilot/chartpilot/internal/registryv1"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// Optional validator suites (--select-optional suite=NAME).
const (
	SuiteOperatorHub   = "operatorhub"
	SuiteGoodPractices = "good-practices"
	SuiteAll           = "all"
)

// Suites are the optional suites' names.
var Suites = []string{SuiteOperatorHub, SuiteGoodPractices, SuiteAll}

// ValidateOptions configure Validate.
type ValidateOptions struct {
	// Dir is the bundle directory (manifests/, metadata/). Required.
	Dir string
	// KubeVersion is the Kubernetes version deprecated and removed APIs are
	// checked against (default rbac.DefaultKubeVersion): an API removed in
	// it is an error, one deprecated a warning.
	KubeVersion string
	// Suites are optional suites run besides the default validators (CSV,
	// CRD, bundle format, objects, deprecated/removed APIs): "operatorhub"
	// (OperatorHub metadata, standard categories and capabilities),
	// "good-practices", or "all" (both). operator-framework's multi-arch
	// validator is left out: it runs `docker pull`.
	Suites []string
	// Project, when set, is the project the bundle was generated from: the
	// CRDs under the crds/ directories of the charts its watches.yaml names
	// are checked too (rbac.CheckCRDs, as init and generate do). The
	// operator image carries the charts, not the bundle, and Helm installs
	// crds/ as they are: a removed API there fails every install.
	Project string
	// Previous is the bundle this one upgrades (a directory or a bundle
	// image). Set, the CRDs are compared with its CRDs by OLM v1's
	// upgrade-safety rules (crddiff): each unsafe change is an error.
	Previous string
	// AllowUnsafeAPIChanges reports the unsafe changes as warnings.
	AllowUnsafeAPIChanges bool
	// OLMv1 makes the reasons OLM v1 (operator-controller, the version of
	// olmv1.OperatorControllerVersion) refuses the bundle errors; they are
	// warnings otherwise.
	OLMv1 bool
}

// Finding is one error or warning of a validator.
type Finding struct {
	// Level is "error" or "warning".
	Level string `json:"level"`
	// File is the bundle file concerned, relative to the bundle directory,
	// or the bundle itself (".") for findings about the whole.
	File string `json:"file"`
	// Field is the field concerned, when the validator says.
	Field string `json:"field,omitempty"`
	// Object names the object the validator reported on.
	Object string `json:"object,omitempty"`
	// Type is the validator's error type, e.g. "FieldNotFound".
	Type string `json:"type,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

func (f Finding) String() string {
	loc := f.File
	if f.Field != "" {
		loc += " " + f.Field
	}
	return fmt.Sprintf("%s: %s: %s", f.Level, loc, f.Message)
}

// Report is the outcome of Validate.
type Report struct {
	Dir      string    `json:"dir"`
	Passed   bool      `json:"passed"`
	Findings []Finding `json:"findings"`
	// OLMv1 says whether OLM v1 installs the bundle.
	OLMv1 *OLMv1Verdict `json:"olmV1,omitempty"`
	// Extras are the backup API's extra permissions the CSV grants, each
	// named with why.
	Extras []rbac.Extra `json:"extraPermissions,omitempty"`
}

// Errors counts the error findings.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == levelError {
			n++
		}
	}
	return n
}

// WriteText prints the findings, errors first, one a line.
func (r *Report) WriteText(w io.Writer) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	for _, e := range r.Extras {
		if _, err := fmt.Fprintf(w, "extra permission %s\n", e); err != nil {
			return err
		}
	}
	if r.OLMv1 != nil {
		if err := r.OLMv1.WriteText(w); err != nil {
			return err
		}
	}
	status := "valid"
	if !r.Passed {
		status = "invalid"
	}
	_, err := fmt.Fprintf(w, "bundle %s is %s: %d error(s), %d warning(s)\n", r.Dir, status, r.Errors(), len(r.Findings)-r.Errors())
	return err
}

// ErrInvalid is returned by Validate when the bundle has errors; the
// report lists them.
var ErrInvalid = errors.New("bundle has validation errors")

const (
	levelError   = "error"
	levelWarning = "warning"
)

// Validate runs operator-framework/api's validators on a bundle directory.
// It returns the report, and ErrInvalid when there are errors; other
// errors mean the bundle could not be read at all.
func Validate(opts ValidateOptions) (*Report, error) {
	if opts.Dir == "" {
		return nil, errors.New("bundle validate: no bundle directory")
	}
	kube := cmp.Or(opts.KubeVersion, rbac.DefaultKubeVersion)
	validators := interfaces.Validators{
		validation.ClusterServiceVersionValidator,
		validation.CustomResourceDefinitionValidator,
		validation.BundleValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
	}
	for _, s := range opts.Suites {
		switch s {
		case SuiteOperatorHub:
			validators = append(validators, validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator, validation.StandardCategoriesValidator)
		case SuiteGoodPractices:
			validators = append(validators, validation.GoodPracticesValidator)
		case SuiteAll:
			validators = append(validators, validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator,
				validation.StandardCategoriesValidator, validation.GoodPracticesValidator)
		default:
			return nil, fmt.Errorf("bundle validate: unknown suite %q (one of %s)", s, strings.Join(Suites, ", "))
		}
	}

	rep := &Report{Dir: opts.Dir}
	files, err := indexFiles(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("bundle validate: %w", err)
	}
	rep.Findings = append(rep.Findings, checkMetadata(opts.Dir)...)

	b, err := manifests.GetBundleFromDir(opts.Dir)
	if err != nil && b == nil {
		rep.Findings = append(rep.Findings, Finding{Level: levelError, File: registryv1.ManifestsDir, Type: string(valerrors.ErrorInvalidBundle), Message: err.Error()})
		return rep.finish()
	}
	if err != nil {
		rep.Findings = append(rep.Findings, Finding{Level: levelError, File: registryv1.ManifestsDir, Type: string(valerrors.ErrorInvalidBundle), Message: err.Error()})
	}
	if opts.Project != "" {
		found, err := checkChartCRDs(opts.Project, kube)
		if err != nil {
			return nil, fmt.Errorf("bundle validate: %w", err)
		}
		rep.Findings = append(rep.Findings, found...)
	}
	if opts.Previous != "" {
		found, err := checkPrevious(context.Background(), b.V1CRDs, opts, files)
		if err != nil {
			return nil, fmt.Errorf("bundle validate: %w", err)
		}
		rep.Findings = append(rep.Findings, found...)
	}
	rep.Findings = append(rep.Findings, checkPrometheusRules(b.Objects, files)...)
	if b.CSV != nil {
		rep.Extras = strategyExtras(b.CSV.Spec.InstallStrategy.StrategySpec)
	}
	verdict, found := checkOLMv1(opts.Dir, opts.OLMv1)
	rep.OLMv1 = verdict
	rep.Findings = append(rep.Findings, found...)
	objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": kube})
	for _, res := range validators.Validate(objs...) {
		for _, e := range slices.Concat(res.Errors, res.Warnings) {
			rep.Findings = append(rep.Findings, finding(e, res.Name, files))
		}
	}
	return rep.finish()
}

func (r *Report) finish() (*Report, error) {
	// Stable order: errors first, then by file, field and message; the
	// validators can report the same finding twice (e.g. through the
	// bundle and the CSV), which is shown once.
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.Level, b.Level), strings.Compare(a.File, b.File), strings.Compare(a.Field, b.Field), strings.Compare(a.Message, b.Message))
	})
	r.Findings = slices.Compact(r.Findings)
	r.Passed = r.Errors() == 0
	if !r.Passed {
		return r, ErrInvalid
	}
	return r, nil
}

// fileIndex maps objects to the bundle files holding them.
type fileIndex struct {
	byName map[string]string // object name -> file
	csv    string
}

// indexFiles reads the kind and name of every manifest.
func indexFiles(dir string) (fileIndex, error) {
	idx := fileIndex{byName: map[string]string{}}
	entries, err := os.ReadDir(filepath.Join(dir, registryv1.ManifestsDir))
	if err != nil {
		return idx, fmt.Errorf("%s is not a bundle directory: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		rel := registryv1.ManifestsDir + "/" + e.Name()
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return idx, err
		}
		var o unstructured.Unstructured
		if yaml.Unmarshal(data, &o.Object) != nil {
			continue // the bundle loader reports it
		}
		if o.GetKind() == kindCSV {
			idx.csv = rel
		}
		if _, taken := idx.byName[o.GetName()]; !taken {
			idx.byName[o.GetName()] = rel
		}
	}
	return idx, nil
}

// finding turns a validator's error into a finding naming the file.
func finding(e valerrors.Error, object string, idx fileIndex) Finding {
	f := Finding{Level: levelWarning, Field: e.Field, Object: object, Type: string(e.Type), Message: e.Detail}
	if e.Level == valerrors.LevelError {
		f.Level = levelError
	}
	if f.Message == "" {
		f.Message = e.Error()
	}
	if bv, ok := e.BadValue.(string); ok && bv != "" && f.Field != "" && !strings.Contains(f.Message, bv) {
		f.Message += fmt.Sprintf(" (value %q)", bv)
	}
	f.File = idx.byName[object]
	if f.File == "" {
		// The bundle-level validators name the bundle by its CSV's name;
		// their fields are the CSV's, or the bundle's as a whole.
		f.File = cmp.Or(idx.csv, ".")
	}
	if strings.HasPrefix(f.Field, "annotations") || strings.Contains(f.Message, "annotations.yaml") {
		f.File = registryv1.AnnotationsFile
	}
	return f
}

// checkMetadata checks metadata/annotations.yaml, which the validators of
// operator-framework/api only read in part.
func checkMetadata(dir string) []Finding {
	ann, err := ReadAnnotations(dir)
	if err != nil {
		return []Finding{{Level: levelError, File: registryv1.AnnotationsFile, Message: err.Error()}}
	}
	var out []Finding
	need := func(key, want string) {
		switch got := ann[key]; {
		case got == "":
			out = append(out, Finding{Level: levelError, File: registryv1.AnnotationsFile, Field: "annotations." + key, Message: "missing"})
		case want != "" && strings.TrimSuffix(got, "/") != strings.TrimSuffix(want, "/"):
			out = append(out, Finding{Level: levelError, File: registryv1.AnnotationsFile, Field: "annotations." + key, Message: fmt.Sprintf("is %q, want %q", got, want)})
		}
	}
	need(registryv1.AnnotationMediaType, registryv1.MediaTypeRegistryV1)
	need(registryv1.AnnotationManifests, registryv1.ManifestsDir+"/")
	need(registryv1.AnnotationMetadata, registryv1.MetadataDir+"/")
	need(registryv1.AnnotationPackage, "")
	need(registryv1.AnnotationChannels, "")
	if def := ann[registryv1.AnnotationDefaultChannel]; def != "" && !slices.Contains(strings.Split(ann[registryv1.AnnotationChannels], ","), def) {
		out = append(out, Finding{Level: levelError, File: registryv1.AnnotationsFile, Field: "annotations." + registryv1.AnnotationDefaultChannel,
			Message: fmt.Sprintf("default channel %q is not one of the channels %q", def, ann[registryv1.AnnotationChannels])})
	}
	if cfg := ann[registryv1.AnnotationTestConfig]; cfg != "" {
		if _, err := os.Stat(filepath.Join(dir, cfg, "config.yaml")); err != nil {
			out = append(out, Finding{Level: levelError, File: registryv1.AnnotationsFile, Field: "annotations." + registryv1.AnnotationTestConfig,
				Message: fmt.Sprintf("names %s, which holds no config.yaml", cfg)})
		}
	}
	return out
}

// checkChartCRDs checks the crds/ of each chart of the project's
// watches.yaml; each finding names the file as a path under the project.
func checkChartCRDs(project, kubeVersion string) ([]Finding, error) {
	watches, err := scaffold.LoadWatches(project)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, w := range watches {
		c, err := scaffold.LoadChart(project, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", filepath.Join(project, scaffold.WatchesFile), w.Kind, w.Chart, err)
		}
		removed, deprecated, err := rbac.CheckCRDs(c, kubeVersion)
		if err != nil {
			return nil, err
		}
		// A problem names the file from the chart's directory's parent
		// ("webapp/crds/x.yaml"); the chart sits at w.Chart.
		file := func(p rbac.Problem) string {
			return filepath.Join(project, filepath.Dir(filepath.FromSlash(w.Chart)), filepath.FromSlash(p.Template))
		}
		for _, p := range removed {
			out = append(out, Finding{Level: levelError, File: file(p), Object: p.GVK.Kind, Type: "RemovedAPI", Message: p.Message})
		}
		for _, p := range deprecated {
			out = append(out, Finding{Level: levelWarning, File: file(p), Object: p.GVK.Kind, Type: "DeprecatedAPI", Message: p.Message})
		}
	}
	return out, nil
}

// ProjectOf is the project a bundle directory was generated into: its
// parent when that holds a watches.yaml (`make bundle` writes ./bundle),
// else "".
func ProjectOf(bundleDir string) string {
	parent := filepath.Dir(filepath.Clean(bundleDir))
	if _, err := os.Stat(filepath.Join(parent, scaffold.WatchesFile)); err != nil {
		return ""
	}
	return parent
}

// checkPrometheusRules loads the bundle's PrometheusRules as Prometheus
// would: an alert that does not parse fails there, at deploy time, and only
// in Prometheus's log.
func checkPrometheusRules(objs []*unstructured.Unstructured, idx fileIndex) []Finding {
	var out []Finding
	for _, o := range objs {
		if o.GetKind() != promrule.Kind || o.GroupVersionKind().Group != promrule.Group {
			continue
		}
		if err := promrule.Validate(o); err != nil {
			out = append(out, Finding{Level: levelError, File: idx.byName[o.GetName()], Object: o.GetName(), Type: string(valerrors.ErrorInvalidOperation), Message: err.Error()})
		}
	}
	return out
}
