package scorecard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apivalidation "github.com/operator-framework/api/pkg/validation"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/bundle/olmv1"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// testFunc runs one test; the result's Name and timestamp are the runner's.
type testFunc func(ctx context.Context, r *run) v1alpha3.TestResult

// result accumulates a test's outcome. Errors make it fail; fatal ones
// (the test could not look at what it tests) make it an error.
type result struct {
	v1alpha3.TestResult
}

func newResult() *result {
	return &result{v1alpha3.TestResult{State: v1alpha3.PassState, Errors: []string{}, Suggestions: []string{}}}
}

func (r *result) fail(format string, args ...any) {
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
	if r.State == v1alpha3.PassState {
		r.State = v1alpha3.FailState
	}
}

func (r *result) error(err error) v1alpha3.TestResult {
	r.Errors = append(r.Errors, err.Error())
	r.State = v1alpha3.ErrorState
	return r.TestResult
}

func (r *result) suggest(format string, args ...any) {
	r.Suggestions = append(r.Suggestions, fmt.Sprintf(format, args...))
}

func (r *result) logf(format string, args ...any) {
	r.Log += fmt.Sprintf(format, args...) + "\n"
}

// checkSpec (basic-check-spec): every alm-example has a spec block.
func checkSpec(_ context.Context, run *run) v1alpha3.TestResult {
	r := newResult()
	crs, err := run.bundle.CustomResources()
	if err != nil {
		r.fail("error getting custom resources: %s", err)
		return r.TestResult
	}
	if len(crs) == 0 {
		r.suggest("add sample custom resources to the CSV's %s annotation (config/samples)", almExamples)
	}
	for _, cr := range crs {
		if cr.Object["spec"] == nil {
			r.fail("error spec does not exist for the custom resource %s", cr.GetName())
			r.suggest("give %s %s a spec: the values its Helm release is installed with", cr.GetKind(), cr.GetName())
		}
	}
	return r.TestResult
}

// bundleValidation (olm-bundle-validation): the bundle's format (metadata
// and manifests directories, annotations) and operator-framework's default
// bundle validators: errors fail, warnings are suggestions.
func bundleValidation(_ context.Context, run *run) v1alpha3.TestResult {
	r := newResult()
	b := run.bundle
	for _, msg := range bundleFormatErrors(b) {
		r.fail("%s", msg)
	}
	m, err := b.manifests()
	if err != nil {
		r.fail("%s", err)
		return r.TestResult
	}
	objs := []any{m, m.CSV}
	for _, crd := range m.V1CRDs {
		objs = append(objs, crd)
	}
	for _, crd := range m.V1beta1CRDs {
		objs = append(objs, crd)
	}
	for _, res := range apivalidation.DefaultBundleValidators.Validate(objs...) {
		for _, e := range res.Errors {
			r.fail("%s", e.Error())
		}
		for _, w := range res.Warnings {
			r.suggest("%s", w.Error())
		}
	}
	r.logf("validated bundle %s (CSV %s, %d CRDs)", b.Dir, m.CSV.GetName(), len(m.V1CRDs)+len(m.V1beta1CRDs))
	olmV1(r, b)
	return r.TestResult
}

// olmV1 says whether OLM v1 installs the bundle: OLM v0 does, so what OLM v1
// refuses or does otherwise are suggestions, each with its fix.
func olmV1(r *result, b *Bundle) {
	ver := olmv1.OperatorControllerVersion
	v1, err := olmv1.Load(os.DirFS(b.Dir))
	if err != nil {
		r.suggest("OLM v1 (operator-controller %s) cannot read the bundle: %s", ver, err)
		return
	}
	installs := true
	for _, p := range olmv1.Check(v1) {
		what := "installs the bundle, but"
		if p.Level == olmv1.LevelError {
			installs, what = false, "refuses to install the bundle:"
		}
		r.suggest("OLM v1 (operator-controller %s) %s %s (%s); fix: %s", ver, what, p.Message, p.File, p.Fix)
	}
	if installs {
		r.logf("OLM v1 (operator-controller %s) installs the bundle (AllNamespaces mode)", ver)
	} else {
		r.logf("OLM v1 (operator-controller %s) refuses the bundle: see the suggestions", ver)
	}
}

// bundleFormatErrors checks the registry+v1 layout: annotations.yaml with
// the required annotations, and the directories they name.
func bundleFormatErrors(b *Bundle) []string {
	if b.Annotations == nil {
		return []string{fmt.Sprintf("%s: missing or without annotations", registryv1.AnnotationsFile)}
	}
	var out []string
	for _, key := range []string{registryv1.AnnotationMediaType, registryv1.AnnotationManifests, registryv1.AnnotationMetadata, registryv1.AnnotationPackage, registryv1.AnnotationChannels} {
		if strings.TrimSpace(b.Annotations[key]) == "" {
			out = append(out, fmt.Sprintf("%s: annotation %s is required", registryv1.AnnotationsFile, key))
		}
	}
	if mt := b.Annotations[registryv1.AnnotationMediaType]; mt != "" && mt != registryv1.MediaTypeRegistryV1 {
		out = append(out, fmt.Sprintf("%s: %s is %q: only %s bundles are supported", registryv1.AnnotationsFile, registryv1.AnnotationMediaType, mt, registryv1.MediaTypeRegistryV1))
	}
	for _, key := range []string{registryv1.AnnotationManifests, registryv1.AnnotationMetadata} {
		if v := strings.Trim(b.Annotations[key], "/"); v != "" {
			if fi, err := os.Stat(filepath.Join(b.Dir, filepath.FromSlash(v))); err != nil || !fi.IsDir() {
				out = append(out, fmt.Sprintf("%s: %s names %s/, which is not a directory of the bundle", registryv1.AnnotationsFile, key, v))
			}
		}
	}
	if def := b.Annotations[registryv1.AnnotationDefaultChannel]; def != "" {
		channels := strings.Split(b.Annotations[registryv1.AnnotationChannels], ",")
		for i := range channels {
			channels[i] = strings.TrimSpace(channels[i])
		}
		if !slices.Contains(channels, def) {
			out = append(out, fmt.Sprintf("%s: default channel %q is not one of the bundle's channels %q", registryv1.AnnotationsFile, def, b.Annotations[registryv1.AnnotationChannels]))
		}
	}
	return out
}

// crdsHaveValidation (olm-crds-have-validation): for each alm-example, the
// CRD version it uses has a schema, and that schema describes each of the
// example's top-level spec and status fields.
func crdsHaveValidation(_ context.Context, run *run) v1alpha3.TestResult {
	r := newResult()
	crs, err := run.bundle.CustomResources()
	if err != nil {
		return r.error(err)
	}
	crds, err := run.bundle.v1CRDs()
	if err != nil {
		return r.error(err)
	}
	r.logf("loaded %d custom resources from %s and %d CRDs", len(crs), almExamples, len(crds))
	for _, cr := range crs {
		gvk := cr.GroupVersionKind()
		for _, crd := range crds {
			if crd.Spec.Group != gvk.Group || !sameKind(crd.Spec.Names.Kind, gvk.Kind) {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if !strings.EqualFold(v.Name, gvk.Version) {
					continue
				}
				if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					r.suggest("Add CRD validation for %s/%s", crd.Spec.Names.Kind, v.Name)
					continue
				}
				for _, block := range []string{"spec", "status"} {
					fields, _ := cr.Object[block].(map[string]any)
					props := v.Schema.OpenAPIV3Schema.Properties[block]
					for _, key := range sortedKeys(fields) {
						if _, ok := props.Properties[key]; !ok {
							r.fail("%s %s: %s field %q is not in the schema of CRD %s version %s", gvk.Kind, cr.GetName(), block, key, crd.Name, v.Name)
							r.suggest("Add CRD validation for %s field `%s` in %s/%s", block, key, gvk.Kind, gvk.Version)
						}
					}
				}
			}
		}
	}
	return r.TestResult
}

// sameKind compares kinds case-insensitively and singular to plural, as
// operator-sdk does.
func sameKind(a, b string) bool {
	var m meta.DefaultRESTMapper
	if s, err := m.ResourceSingularizer(a); err == nil {
		a = s
	}
	if s, err := m.ResourceSingularizer(b); err == nil {
		b = s
	}
	return strings.EqualFold(a, b)
}

// crdsHaveResources (olm-crds-have-resources): every owned CRD of the CSV
// lists the resources its operator creates for it.
func crdsHaveResources(_ context.Context, run *run) v1alpha3.TestResult {
	r := newResult()
	m, err := run.bundle.manifests()
	if err != nil {
		return r.error(err)
	}
	r.logf("loaded ClusterServiceVersion %s", m.CSV.GetName())
	for i, owned := range m.CSV.Spec.CustomResourceDefinitions.Owned {
		if len(owned.Resources) == 0 {
			r.fail("Owned CRDs do not have resources specified: %s", owned.Name)
			r.suggest("list the kinds the chart of %s creates in spec.customresourcedefinitions.owned[%d].resources (for example {kind: Deployment, version: v1})", owned.Kind, i)
		}
	}
	return r.TestResult
}

// specDescriptors (olm-spec-descriptors): each top-level spec field of each
// alm-example has a spec descriptor of that path in its owned CRD.
func specDescriptors(_ context.Context, run *run) v1alpha3.TestResult {
	return descriptors(run, "spec")
}

// statusDescriptors (olm-status-descriptors): an alm-example with a status
// needs status descriptors in its owned CRD; one without only gets a
// suggestion.
func statusDescriptors(_ context.Context, run *run) v1alpha3.TestResult {
	return descriptors(run, "status")
}

func descriptors(run *run, block string) v1alpha3.TestResult {
	r := newResult()
	m, err := run.bundle.manifests()
	if err != nil {
		return r.error(err)
	}
	crs, err := run.bundle.CustomResources()
	if err != nil {
		return r.error(err)
	}
	r.logf("loaded ClusterServiceVersion %s and %d custom resources from %s", m.CSV.GetName(), len(crs), almExamples)
	for _, cr := range crs {
		owned := ownedCRD(m.CSV, cr)
		if owned == nil {
			r.fail("Failed to find an owned CRD for CR %s with GVK %s", cr.GetName(), cr.GroupVersionKind())
			continue
		}
		fields, _ := cr.Object[block].(map[string]any)
		if block == "status" {
			if len(fields) == 0 {
				r.suggest("%s does not have status spec. Note that all objects that represent a physical resource whose state may vary from the user's desired intent SHOULD have a spec and a status", owned.Name)
			} else if len(owned.StatusDescriptors) == 0 {
				r.fail("%s does not have a status descriptor", owned.Name)
				r.suggest("add status descriptor for the crd %s", owned.Name)
			}
			continue
		}
		if cr.Object["spec"] == nil {
			r.fail("%s %s has no spec", cr.GetKind(), cr.GetName())
			continue
		}
		paths := map[string]bool{}
		for _, d := range owned.SpecDescriptors {
			paths[d.Path] = true
		}
		for _, key := range sortedKeys(fields) {
			if !paths[key] {
				r.fail("%s does not have a spec descriptor", key)
				r.suggest("Add a spec descriptor for %s", key)
			}
		}
	}
	return r.TestResult
}

func ownedCRD(csv *v1alpha1.ClusterServiceVersion, cr *unstructured.Unstructured) *v1alpha1.CRDDescription {
	for i, o := range csv.Spec.CustomResourceDefinitions.Owned {
		if o.Kind == cr.GetKind() {
			return &csv.Spec.CustomResourceDefinitions.Owned[i]
		}
	}
	return nil
}

// v1CRDs are the bundle's CRDs as apiextensions/v1.
func (b *Bundle) v1CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	m, err := b.manifests()
	if err != nil {
		return nil, err
	}
	if len(m.V1beta1CRDs) > 0 {
		return nil, fmt.Errorf("CRD %s is apiextensions.k8s.io/v1beta1, removed in Kubernetes 1.22: regenerate it as v1", m.V1beta1CRDs[0].Name)
	}
	return m.V1CRDs, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
