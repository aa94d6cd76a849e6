package crddiff

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// key is a change as the tests name it: scope, version, path and rule.
func key(c Change) string {
	return strings.Join([]string{string(c.Scope), c.Version, c.Path, string(c.Rule)}, " ")
}

func TestCompare(t *testing.T) {
	tests := map[string][]string{
		"field-removed":        {"version v1alpha1 spec.name existingFieldRemoval"},
		"nested-field-removed": {"version v1alpha1 spec.image.tag existingFieldRemoval"},
		"enum-narrowed":        {"version v1alpha1 spec.color enum"},
		"enum-added":           {"version v1alpha1 spec.image.repository enum"},
		"type-changed": {
			"version v1alpha1 spec.replicaCount default",
			"version v1alpha1 spec.replicaCount type",
		},
		"required-added":         {"version v1alpha1 spec required"},
		"default-changed":        {"version v1alpha1 spec.replicaCount default"},
		"default-added":          {"version v1alpha1 spec.color default"},
		"default-removed":        {"version v1alpha1 spec.replicaCount default"},
		"maximum-lowered":        {"version v1alpha1 spec.replicaCount maximum"},
		"minimum-raised":         {"version v1alpha1 spec.replicaCount minimum"},
		"maxlength-lowered":      {"version v1alpha1 spec.name maxLength"},
		"minlength-raised":       {"version v1alpha1 spec.name minLength"},
		"maxitems-added":         {"version v1alpha1 spec.tags maxItems"},
		"minitems-added":         {"version v1alpha1 spec.tags minItems"},
		"maxproperties-added":    {"version v1alpha1 spec.labels maxProperties"},
		"pattern-changed":        {"version v1alpha1 spec.image.tag unhandled"},
		"nullable-added":         {"version v1alpha1 spec.name unhandled"},
		"map-value-type-changed": {"version v1alpha1 spec.labels unhandled", "version v1alpha1 spec.labels[*] type"},
		"list-item-type-changed": {"version v1alpha1 spec.tags[*] type"},
		"scope-changed":          {"crd   scope"},
		"stored-version-removed": {"crd   storedVersionRemoval"},
		"version-added-field-removed": {
			"served v1alpha1 -> v1beta1 spec.name existingFieldRemoval",
		},
		// The CRDs chartpilot generates from the releases of a test chart
		// (scaffold's TestChartPairsForOLMv1 writes them).
		"chart-enum-narrowed":                    {"version v1alpha1 spec.color unhandled"}, // an enum written as a pattern
		"chart-field-removed":                    {"version v1alpha1 spec.legacy existingFieldRemoval"},
		"chart-type-changed":                     {"version v1alpha1 spec.size type"},
		"chart-version-added-field-removed":      {"served v1alpha1 -> v1beta1 spec.legacy existingFieldRemoval"},
		"chart-version-dropped-before-migration": {"crd   storedVersionRemoval"},
		"chart-field-added":                      nil,
		"chart-version-added":                    nil,
		"chart-version-dropped-after-migration":  nil,
		// safe
		"optional-field-added":      nil,
		"enum-widened":              nil,
		"bounds-loosened":           nil,
		"bound-removed":             nil,
		"description-changed":       nil,
		"unchanged":                 nil,
		"version-added-same-schema": nil,
		"unserved-version-differs":  nil,
	}
	for _, name := range pairNames(t) {
		want, ok := tests[name]
		if !ok {
			t.Errorf("testdata/%s has no expectation", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			old, new := readPair(t, name)
			changes := Compare(old, new)
			var got []string
			for _, c := range changes {
				got = append(got, key(c))
				if c.CRD != new.Name || c.Detail == "" || c.Why == "" || c.Fix == "" {
					t.Errorf("change %+v: missing CRD, detail, why or fix", c)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("changes:\n got %q\nwant %q\n%v", got, want, changes)
			}
		})
	}
}

func TestCompareDetails(t *testing.T) {
	tests := []struct {
		pair   string
		detail string
	}{
		{"enum-narrowed", `enum values ["blue"] removed`},
		{"enum-added", `enum ["nginx"] added where any value was allowed`},
		{"type-changed", "type changed from integer to string"},
		{"required-added", "new required field(s) name"},
		{"default-changed", "default changed from 1 to 2"},
		{"maximum-lowered", "maximum lowered from 10 to 5"},
		{"minitems-added", "minItems 1 added where there was none"},
		{"pattern-changed", "changed: pattern"},
		{"scope-changed", "scope changed from Namespaced to Cluster"},
		{"stored-version-removed", "stored version(s) v1alpha1 removed"},
	}
	for _, tt := range tests {
		old, new := readPair(t, tt.pair)
		var details []string
		for _, c := range Compare(old, new) {
			details = append(details, c.Detail)
		}
		if !slices.Contains(details, tt.detail) {
			t.Errorf("%s: details %q, want %q among them", tt.pair, details, tt.detail)
		}
	}
}

func TestCompareNewCRD(t *testing.T) {
	_, new := readPair(t, "field-removed")
	if got := Compare(nil, new); got != nil {
		t.Errorf("a new CRD: %v, want no changes", got)
	}
	if got := CompareAll(nil, []*apiextensionsv1.CustomResourceDefinition{new}); got != nil {
		t.Errorf("CompareAll of a new CRD: %v, want no changes", got)
	}
}

func TestStoredVersionsFromStatus(t *testing.T) {
	old, new := readPair(t, "version-added-same-schema")
	// The cluster's CRD says CRs were stored in v1beta1 too, which new drops.
	old.Status.StoredVersions = []string{"v1alpha1", "v0"}
	got := Compare(old, new)
	if len(got) != 1 || got[0].Rule != RuleStoredVersionRemoval || !strings.Contains(got[0].Detail, "v0") {
		t.Errorf("changes %v, want v0's removal", got)
	}
}
