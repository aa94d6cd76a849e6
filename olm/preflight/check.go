package preflight

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/crddiff"
)

// Kind is what the new CRD would do to a CR.
type Kind string

const (
	// KindRejected: the CR fails the new schema; the API server refuses
	// its next update, and OLM v0 refuses the InstallPlan.
	KindRejected Kind = "rejected"
	// KindPruned: the new schema does not know the field; the API server
	// drops it when the CR is next read or written.
	KindPruned Kind = "pruned"
)

// Problem is one CR the new CRD would reject or prune.
type Problem struct {
	CRD       string `json:"crd"`
	Version   string `json:"version"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Kind      Kind   `json:"problem"`
	Field     string `json:"field"`
	Message   string `json:"message"`
}

func (p Problem) String() string {
	cr := p.Name
	if p.Namespace != "" {
		cr = p.Namespace + "/" + p.Name
	}
	return fmt.Sprintf("%s %s %s: %s %s: %s", p.CRD, p.Version, cr, p.Field, p.Kind, p.Message)
}

// CRDResult says what was checked for one CRD of the bundle.
type CRDResult struct {
	CRD string `json:"crd"`
	// New is true when the cluster does not have the CRD yet.
	New bool `json:"new,omitempty"`
	// CRs counts the CRs checked.
	CRs int `json:"crs"`
}

// Report is the outcome of Check.
type Report struct {
	CRDs     []CRDResult `json:"crds"`
	Problems []Problem   `json:"problems"`
	// StoredVersionsDropped are the versions a new CRD removes while the
	// cluster's CRD still lists them in status.storedVersions (crddiff's
	// storedVersionRemoval rule, judged on the CRD as the cluster has
	// it): CRs may be stored in them, which the API server could then no
	// longer read. OLM v0 and v1 refuse such an upgrade; chartpilot olm
	// migrate moves the CRs to the storage version and trims the list.
	StoredVersionsDropped []crddiff.Change `json:"storedVersionsDropped,omitempty"`
}

// OK is true when no CR would be rejected or pruned, and no version CRs
// may be stored in is dropped.
func (r *Report) OK() bool { return len(r.Problems) == 0 && len(r.StoredVersionsDropped) == 0 }

// WriteText prints the dropped stored versions and the problems, then a
// line per CRD.
func (r *Report) WriteText(w io.Writer) error {
	if err := crddiff.WriteText(w, r.StoredVersionsDropped); err != nil {
		return err
	}
	for _, p := range r.Problems {
		if _, err := fmt.Fprintln(w, p); err != nil {
			return err
		}
	}
	for _, c := range r.CRDs {
		state := fmt.Sprintf("%d CR(s) checked", c.CRs)
		if c.New {
			state = "new on this cluster"
		}
		if _, err := fmt.Fprintf(w, "%s: %s\n", c.CRD, state); err != nil {
			return err
		}
	}
	return nil
}

// Check reads every CR of each CRD the cluster already has and lists those
// the new CRD would reject or prune. A CR is checked in each version the
// cluster serves it in, against the new CRD's version of the same name, or
// its storage version when the new CRD drops that version.
func Check(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) (*Report, error) {
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rep := &Report{Problems: []Problem{}}
	for _, crd := range crds {
		old, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			rep.CRDs = append(rep.CRDs, CRDResult{CRD: crd.Name, New: true})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading CRD %s: %w", crd.Name, err)
		}
		for _, c := range crddiff.Compare(old, crd) {
			if c.Rule == crddiff.RuleStoredVersionRemoval {
				rep.StoredVersionsDropped = append(rep.StoredVersionsDropped, c)
			}
		}
		res, problems, err := checkCRD(ctx, dyn, old, crd)
		if err != nil {
			return nil, err
		}
		rep.CRDs = append(rep.CRDs, res)
		rep.Problems = append(rep.Problems, problems...)
	}
	slices.SortStableFunc(rep.Problems, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.CRD, b.CRD), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
			strings.Compare(a.Field, b.Field), strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.Version, b.Version))
	})
	return rep, nil
}

// checkCRD checks the CRs of one CRD, in every version the cluster serves.
func checkCRD(ctx context.Context, dyn dynamic.Interface, old, new *apiextensionsv1.CustomResourceDefinition) (CRDResult, []Problem, error) {
	res := CRDResult{CRD: new.Name}
	seen := map[string]bool{}    // a CR's problem, whatever the version it was read in
	counted := map[string]bool{} // a CR, counted once
	var out []Problem
	for _, v := range old.Spec.Versions {
		if !v.Served {
			continue
		}
		target := versionOf(new, v.Name)
		if target == nil {
			target = storageVersion(new)
		}
		if target == nil {
			return res, nil, fmt.Errorf("CRD %s has no storage version", new.Name)
		}
		s, err := newSchema(target)
		if err != nil {
			return res, nil, fmt.Errorf("CRD %s version %s: %w", new.Name, target.Name, err)
		}
		gvr := schema.GroupVersionResource{Group: old.Spec.Group, Version: v.Name, Resource: old.Spec.Names.Plural}
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return res, nil, fmt.Errorf("listing %s: %w", gvr, err)
		}
		for _, item := range list.Items {
			id := item.GetNamespace() + "/" + item.GetName()
			if !counted[id] {
				counted[id] = true
				res.CRs++
			}
			for _, p := range s.check(item.Object) {
				p.CRD, p.Version, p.Namespace, p.Name = new.Name, target.Name, item.GetNamespace(), item.GetName()
				key := id + "\x00" + string(p.Kind) + "\x00" + p.Field + "\x00" + p.Message
				if !seen[key] {
					seen[key] = true
					out = append(out, p)
				}
			}
		}
	}
	return res, out, nil
}

func versionOf(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// versionSchema is a CRD version's schema as the API server uses it.
type versionSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

func newSchema(v *apiextensionsv1.CustomResourceDefinitionVersion) (*versionSchema, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no openAPIV3Schema")
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the schema is not structural: %w", err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &versionSchema{structural: structural, validator: validator}, nil
}

// check does to a copy of the CR what the API server does on a write:
// prune the fields the schema does not know, apply its defaults, validate.
func (s *versionSchema) check(obj map[string]any) []Problem {
	obj = runtime.DeepCopyJSON(obj)
	var out []Problem
	pruned := structuralpruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, f := range pruned {
		out = append(out, Problem{Kind: KindPruned, Field: f, Message: "the new schema has no such field: the API server drops it"})
	}
	structuraldefaulting.Default(obj, s.structural)
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, s.validator) {
		out = append(out, Problem{Kind: KindRejected, Field: e.Field, Message: e.ErrorBody()})
	}
	return out
}
