package bundle

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	backupapi "github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// ownedAPIs describes the CRDs the bundle owns in the CSV, with what each
// kind's chart creates, and their samples as alm-examples. It also finds
// the images the charts run and their objects in namespaces of their own,
// for the install strategy's step.
func (g *generation) ownedAPIs(csv *v1alpha1.ClusterServiceVersion, m *projectManifests) error {
	crds, err := typedCRDs(m.crds)
	if err != nil {
		return err
	}
	if err := checkSamples(m.samples, crds); err != nil {
		return err
	}
	resources, err := g.chartResources(m.samples, crds)
	if err != nil {
		return err
	}
	csv.Spec.CustomResourceDefinitions.Owned = ownedCRDs(crds, csv.Spec.CustomResourceDefinitions.Owned, resources)
	examples, err := almExamples(m.samples)
	csv.Annotations[AnnotationALMExamples] = examples
	return err
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

// ownedCRDs describes each served version of each CRD, keeping what the
// base says (display names, descriptions, descriptors) over what is derived.
func ownedCRDs(crds []*apiextensionsv1.CustomResourceDefinition, base []v1alpha1.CRDDescription, resources map[string][]v1alpha1.APIResourceReference) []v1alpha1.CRDDescription {
	var out []v1alpha1.CRDDescription
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			d := v1alpha1.CRDDescription{Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind, DisplayName: displayName(crd.Spec.Names.Kind)}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				s := v.Schema.OpenAPIV3Schema
				d.Description = s.Description
				if spec, ok := s.Properties["spec"]; ok {
					d.SpecDescriptors = specDescriptors(spec)
				}
				if status, ok := s.Properties["status"]; ok {
					d.StatusDescriptors = statusDescriptors(status)
				}
			}
			d.Resources = resources[crd.Spec.Group+"/"+crd.Spec.Names.Kind]
			for _, b := range base {
				if b.Name == d.Name && (b.Version == d.Version || b.Version == "") {
					d = mergeCRDDescription(b, d)
				}
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.CRDDescription) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Version, b.Version))
	})
	return out
}

// mergeCRDDescription keeps the author's fields of base over derived ones.
func mergeCRDDescription(base, derived v1alpha1.CRDDescription) v1alpha1.CRDDescription {
	out := derived
	out.DisplayName = cmp.Or(base.DisplayName, derived.DisplayName)
	out.Description = cmp.Or(base.Description, derived.Description)
	out.ActionDescriptor = base.ActionDescriptor
	out.SpecDescriptors = mergeByPath(base.SpecDescriptors, derived.SpecDescriptors, func(d v1alpha1.SpecDescriptor) string { return d.Path })
	out.StatusDescriptors = mergeByPath(base.StatusDescriptors, derived.StatusDescriptors, func(d v1alpha1.StatusDescriptor) string { return d.Path })
	seen := map[string]bool{}
	out.Resources = nil
	for _, r := range append(slices.Clone(base.Resources), derived.Resources...) {
		if k := r.Kind + "/" + r.Version + "/" + r.Name; !seen[k] {
			seen[k] = true
			out.Resources = append(out.Resources, r)
		}
	}
	return out
}

// mergeByPath keeps base's descriptors and adds derived ones of other
// paths, sorted by path.
func mergeByPath[D any](base, derived []D, path func(D) string) []D {
	out := slices.Clone(base)
	for _, d := range derived {
		if !slices.ContainsFunc(base, func(b D) bool { return path(b) == path(d) }) {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b D) int { return strings.Compare(path(a), path(b)) })
	return out
}

// almExamples is the alm-examples annotation: the samples as a JSON array.
func almExamples(samples []*unstructured.Unstructured) (string, error) {
	list := make([]map[string]any, 0, len(samples))
	for _, s := range samples {
		o := s.DeepCopy()
		o.SetNamespace("")
		list = append(list, o.Object)
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", fmt.Errorf("alm-examples: %w", err)
	}
	return string(data), nil
}
