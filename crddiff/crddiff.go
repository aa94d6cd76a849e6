package crddiff

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	versionhelper "k8s.io/apimachinery/pkg/version"
)

// Rule names an upgrade-safety rule. The values are the names OLM v1's
// check (crdify) gives its validations, so that its messages and ours can
// be matched.
type Rule string

// The rules, in the order a field's changes are checked.
const (
	RuleScope                Rule = "scope"
	RuleStoredVersionRemoval Rule = "storedVersionRemoval"
	RuleExistingFieldRemoval Rule = "existingFieldRemoval"
	RuleEnum                 Rule = "enum"
	RuleRequired             Rule = "required"
	RuleMaximum              Rule = "maximum"
	RuleMaxItems             Rule = "maxItems"
	RuleMaxLength            Rule = "maxLength"
	RuleMaxProperties        Rule = "maxProperties"
	RuleMinimum              Rule = "minimum"
	RuleMinItems             Rule = "minItems"
	RuleMinLength            Rule = "minLength"
	RuleMinProperties        Rule = "minProperties"
	RuleDefault              Rule = "default"
	RuleType                 Rule = "type"
	// RuleUnhandled is any other change of a field: OLM v1 cannot tell
	// whether it is safe and refuses it.
	RuleUnhandled Rule = "unhandled"
)

// Scope says which part of the CRDs a Change is about.
type Scope string

const (
	// ScopeCRD is a change of the whole CRD (scope, stored versions).
	ScopeCRD Scope = "crd"
	// ScopeVersion is a change of one version between the old and new CRD.
	ScopeVersion Scope = "version"
	// ScopeServed is a difference between two served versions of the new
	// CRD (the same CR read through either must mean the same).
	ScopeServed Scope = "served"
)

// Change is one unsafe change.
type Change struct {
	// CRD is the CRD's name (plural.group).
	CRD string `json:"crd"`
	// Scope says whether the change is CRD-wide, within a version, or
	// between two served versions of the new CRD.
	Scope Scope `json:"scope"`
	// Version is the version concerned, or "OLD -> NEW" for two served
	// versions; empty for CRD-wide changes.
	Version string `json:"version,omitempty"`
	// Path is the field, e.g. spec.image.tag; [*] stands for the items of
	// a list or the values of a map. Empty for CRD-wide changes.
	Path string `json:"path,omitempty"`
	Rule Rule   `json:"rule"`
	// Detail says what changed, e.g. `enum values ["b"] removed`.
	Detail string `json:"detail"`
	// Why says how the change breaks CRs already on a cluster.
	Why string `json:"why"`
	// Fix says what to do instead.
	Fix string `json:"fix"`
}

func (c Change) String() string {
	loc := c.CRD
	if c.Version != "" {
		loc += " " + c.Version
	}
	if c.Path != "" {
		loc += " " + c.Path
	}
	return fmt.Sprintf("%s: %s: %s (%s; %s)", loc, c.Rule, c.Detail, c.Why, c.Fix)
}

// ErrUnsafe is returned (wrapped) by callers that refuse unsafe changes.
var ErrUnsafe = errors.New("unsafe CRD changes")

// Compare lists the unsafe changes from old to new, in a stable order.
// Both must be the same CRD (the same name); nil old means a new CRD, which
// cannot break anything.
func Compare(old, new *apiextensionsv1.CustomResourceDefinition) []Change {
	if old == nil || new == nil {
		return nil
	}
	var out []Change
	out = append(out, crdChanges(old, new)...)
	out = append(out, versionChanges(old, new)...)
	out = append(out, servedChanges(old, new)...)
	for i := range out {
		out[i].CRD = new.Name
		out[i].Why, out[i].Fix = explain(out[i])
	}
	sortChanges(out)
	return out
}

// CompareAll compares each CRD of new with the CRD of the same name in old.
// CRDs only in new are new APIs; CRDs only in old are not judged (OLM v1
// checks the CRDs the new release installs).
func CompareAll(old, new []*apiextensionsv1.CustomResourceDefinition) []Change {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range old {
		byName[c.Name] = c
	}
	var out []Change
	for _, c := range new {
		out = append(out, Compare(byName[c.Name], c)...)
	}
	sortChanges(out)
	return out
}

func sortChanges(cs []Change) {
	order := map[Scope]int{ScopeCRD: 0, ScopeVersion: 1, ScopeServed: 2}
	slices.SortStableFunc(cs, func(a, b Change) int {
		return cmp.Or(strings.Compare(a.CRD, b.CRD), cmp.Compare(order[a.Scope], order[b.Scope]),
			strings.Compare(a.Version, b.Version), strings.Compare(a.Path, b.Path),
			strings.Compare(string(a.Rule), string(b.Rule)), strings.Compare(a.Detail, b.Detail))
	})
}

// crdChanges are the CRD-wide rules: scope and stored versions.
func crdChanges(old, new *apiextensionsv1.CustomResourceDefinition) []Change {
	var out []Change
	if old.Spec.Scope != new.Spec.Scope {
		out = append(out, Change{Scope: ScopeCRD, Rule: RuleScope, Detail: fmt.Sprintf("scope changed from %s to %s", old.Spec.Scope, new.Spec.Scope)})
	}
	if gone := DroppedStoredVersions(old, new); len(gone) > 0 {
		out = append(out, Change{Scope: ScopeCRD, Rule: RuleStoredVersionRemoval, Detail: fmt.Sprintf("stored version(s) %s removed", strings.Join(gone, ", "))})
	}
	return out
}

// DroppedStoredVersions are the versions CRs of old may be stored in
// (StoredVersions) that new, the same CRD, no longer has: the rule
// storedVersionRemoval.
func DroppedStoredVersions(old, new *apiextensionsv1.CustomResourceDefinition) []string {
	var gone []string
	for _, v := range StoredVersions(old) {
		if version(new, v) == nil {
			gone = append(gone, v)
		}
	}
	return gone
}

// StoredVersions are the versions CRs of crd may be stored in: its
// status.storedVersions, or, for a CRD read from files (no status), its
// storage version.
func StoredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	if len(crd.Status.StoredVersions) > 0 {
		return crd.Status.StoredVersions
	}
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}

func version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// versionChanges compares each version kept in new with the old one.
func versionChanges(old, new *apiextensionsv1.CustomResourceDefinition) []Change {
	var out []Change
	for _, ov := range old.Spec.Versions {
		nv := version(new, ov.Name)
		if nv == nil {
			continue
		}
		for _, c := range compareSchemas(schemaOf(ov), schemaOf(*nv)) {
			c.Scope, c.Version = ScopeVersion, ov.Name
			out = append(out, c)
		}
	}
	return out
}

// servedChanges compares every pair of served versions of new, oldest
// first, and keeps what the same pair in old did not already show.
func servedChanges(old, new *apiextensionsv1.CustomResourceDefinition) []Change {
	if conv := new.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
		return nil // the webhook converts: the versions may differ
	}
	before := map[string]bool{}
	for _, c := range servedPairChanges(old) {
		before[c.Version+"\x00"+c.Path+"\x00"+string(c.Rule)+"\x00"+c.Detail] = true
	}
	var out []Change
	for _, c := range servedPairChanges(new) {
		if !before[c.Version+"\x00"+c.Path+"\x00"+string(c.Rule)+"\x00"+c.Detail] {
			out = append(out, c)
		}
	}
	return out
}

func servedPairChanges(crd *apiextensionsv1.CustomResourceDefinition) []Change {
	var served []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, v)
		}
	}
	slices.SortFunc(served, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
		return versionhelper.CompareKubeAwareVersionStrings(a.Name, b.Name)
	})
	var out []Change
	for i := range served {
		for j := i + 1; j < len(served); j++ {
			for _, c := range compareSchemas(schemaOf(served[i]), schemaOf(served[j])) {
				c.Scope, c.Version = ScopeServed, served[i].Name+" -> "+served[j].Name
				out = append(out, c)
			}
		}
	}
	return out
}

func schemaOf(v apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

// WriteText prints the changes, one a line with why and what to do, and a
// summary line; nothing when there are none.
func WriteText(w io.Writer, changes []Change) error {
	for _, c := range changes {
		loc := c.CRD
		if c.Version != "" {
			loc += " " + c.Version
		}
		if c.Path != "" {
			loc += " " + c.Path
		}
		if _, err := fmt.Fprintf(w, "unsafe: %s: %s: %s\n    why: %s\n    fix: %s\n", loc, c.Rule, c.Detail, c.Why, c.Fix); err != nil {
			return err
		}
	}
	return nil
}
