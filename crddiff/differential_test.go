package crddiff

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/crdify/pkg/config"
	"sigs.k8s.io/crdify/pkg/runner"
	"sigs.k8s.io/crdify/pkg/validations"
	"sigs.k8s.io/crdify/pkg/validations/property"
)

// olmv1Config is the configuration OLM v1's preflight (operator-controller's
// crdupgradesafety package, internal) gives crdify: served versions with a
// conversion webhook skipped, unhandled changes refused, description
// changes ignored, enum values added allowed.
func olmv1Config() *config.Config {
	return &config.Config{
		Conversion:           config.ConversionPolicyIgnore,
		UnhandledEnforcement: config.EnforcementPolicyError,
		Validations: []config.ValidationConfig{
			{Name: "description", Enforcement: config.EnforcementPolicyNone},
			{Name: "enum", Enforcement: config.EnforcementPolicyError, Configuration: map[string]any{"additionPolicy": property.AdditionPolicyAllow}},
		},
	}
}

// crdifyFindings runs OLM v1's check and returns what it refuses: each
// failing location ("scope version path") with its rules.
func crdifyFindings(t *testing.T, old, new *apiextensionsv1.CustomResourceDefinition) map[string][]string {
	t.Helper()
	r, err := runner.New(olmv1Config(), runner.DefaultRegistry())
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(old, new)
	out := map[string][]string{}
	add := func(loc, rule string) {
		if !slices.Contains(out[loc], rule) {
			out[loc] = append(out[loc], rule)
		}
	}
	for _, c := range res.CRDValidation {
		for _, e := range c.Errors {
			if c.Name != string(RuleExistingFieldRemoval) {
				add("crd  ", c.Name)
				continue
			}
			// "removed field : VERSION.^.PATH"
			_, field, _ := strings.Cut(e, " : ")
			version, path, _ := strings.Cut(field, ".")
			add("version "+version+" "+crdifyPath(path), c.Name)
		}
	}
	collect := func(scope string, results map[string]map[string][]validations.ComparisonResult) {
		for version, byPath := range results {
			for path, rs := range byPath {
				for _, r := range rs {
					if len(r.Errors) > 0 {
						add(scope+" "+version+" "+crdifyPath(path), r.Name)
					}
				}
			}
		}
	}
	collect("version", res.SameVersionValidation)
	collect("served", res.ServedVersionValidation)
	if res.HasFailures() != (len(out) > 0) {
		t.Fatalf("crdify: HasFailures %v, but findings %v", res.HasFailures(), out)
	}
	return out
}

// crdifyPath turns crdify's "^.spec.name" into our "spec.name".
func crdifyPath(p string) string {
	if p == "^" {
		return rootPath
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, "^"), ".")
}

// TestAgreesWithOLMv1 feeds every CRD pair to OLM v1's check (crdify, as
// operator-controller configures it) and to Compare: both must refuse the
// same pairs, at the same locations, for the same rules. A removed field is
// the one place the rules differ by design: OLM v1 also reports the removed
// field's every attribute as changed (its type "changed" to none...), which
// we report once as the removal.
func TestAgreesWithOLMv1(t *testing.T) {
	for _, name := range pairNames(t) {
		t.Run(name, func(t *testing.T) {
			old, new := readPair(t, name)
			// Bundles have no status: both sides judge the storage version
			// as the stored one.
			old.Status.StoredVersions = StoredVersions(old)
			theirs := crdifyFindings(t, old.DeepCopy(), new.DeepCopy())

			ours := map[string][]string{}
			removed := map[string]bool{}
			for _, c := range Compare(old, new) {
				loc := string(c.Scope) + " " + c.Version + " " + c.Path
				ours[loc] = append(ours[loc], string(c.Rule))
				if c.Rule == RuleExistingFieldRemoval {
					removed[loc] = true
				}
			}
			if (len(ours) > 0) != (len(theirs) > 0) {
				t.Fatalf("verdicts differ: ours unsafe=%v %v, OLM v1 unsafe=%v %v", len(ours) > 0, ours, len(theirs) > 0, theirs)
			}
			if o, th := slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(theirs)); !slices.Equal(o, th) {
				t.Fatalf("locations differ:\n ours %q\nOLM v1 %q", o, th)
			}
			for loc, rules := range ours {
				if removed[loc] {
					continue
				}
				slices.Sort(rules)
				th := slices.Sorted(slices.Values(theirs[loc]))
				if !slices.Equal(rules, th) {
					t.Errorf("%s: rules %q, OLM v1 %q", loc, rules, th)
				}
			}
		})
	}
}
