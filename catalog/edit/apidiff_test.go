package edit

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/chartpilot/chartpilot/catalog/internal/catalogtest"
	"github.com/chartpilot/chartpilot/crddiff"
)

// widgetCRD is package w's CRD with the given properties under spec.
func widgetCRD(specProps string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.w.example.com
spec:
  group: w.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {` + specProps + `}
`
}

const (
	sizeAndColor = `size: {type: string}, color: {type: string, enum: [red, blue]}`
	colorOnly    = `color: {type: string, enum: [red, blue]}`
	sizeRedOnly  = `size: {type: string}, color: {type: string, enum: [red]}`
	sizeColorAge = `size: {type: string}, color: {type: string, enum: [red, blue, green]}, age: {type: integer}`
)

// Add compares the bundle's CRDs with every bundle it upgrades in any
// channel and refuses unsafe changes, leaving the catalog as it was, unless
// they are allowed; safe additions pass silently.
func TestAddRefusesUnsafeAPIChanges(t *testing.T) {
	type step struct {
		version, channels, props string
		allow                    bool
		// wantErr are substrings of the refusal; nil means the add succeeds.
		wantErr []string
		// wantChanges is the number of changes reported when allowed.
		wantChanges int
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "field removed",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "stable", props: colorOnly, wantErr: []string{
				"since w.v0.1.0: widgets.w.example.com v1 spec.size: existingFieldRemoval: field removed",
				"keep the field", "--allow-unsafe-api-changes"}},
		},
	}, {
		name: "enum narrowed",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "stable", props: sizeRedOnly, wantErr: []string{`spec.color: enum: enum values ["blue"] removed`}},
		},
	}, {
		name: "unsafe allowed",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "stable", props: colorOnly, allow: true, wantChanges: 1},
		},
	}, {
		name: "safe additions",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "stable", props: sizeColorAge},
		},
	}, {
		// 0.3.0 is safe from 0.2.0 (in fast) but not from 0.1.0 (in stable).
		name: "every channel",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "fast", props: colorOnly},
			{version: "0.3.0", channels: "fast,stable", props: colorOnly, wantErr: []string{"since w.v0.1.0: widgets.w.example.com v1 spec.size"}},
		},
	}, {
		// A cluster on 0.1.0 may go straight to 0.3.0 (skipRange).
		name: "skipRange",
		steps: []step{
			{version: "0.1.0", channels: "stable", props: sizeAndColor},
			{version: "0.2.0", channels: "stable", props: colorOnly, allow: true, wantChanges: 1},
			{version: "0.3.0", channels: "stable", props: colorOnly, wantErr: []string{"since w.v0.1.0:"}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			for _, s := range tt.steps {
				before := snapshot(t, dir)
				res, err := Add(t.Context(), AddOptions{Dir: dir, AllowUnsafeAPIChanges: s.allow,
					BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: s.version, Channels: s.channels, CRD: widgetCRD(s.props)})})
				if s.wantErr == nil {
					if err != nil {
						t.Fatalf("adding %s: %v", s.version, err)
					}
					if len(res.APIChanges) != s.wantChanges {
						t.Errorf("adding %s: API changes %v, want %d", s.version, res.APIChanges, s.wantChanges)
					}
					continue
				}
				if !errors.Is(err, crddiff.ErrUnsafe) {
					t.Fatalf("adding %s: error %v, want crddiff.ErrUnsafe", s.version, err)
				}
				for _, want := range s.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("adding %s: error %q lacks %q", s.version, err, want)
					}
				}
				if after := snapshot(t, dir); after != before {
					t.Errorf("a refused add changed the catalog:\n%s\n---\n%s", before, after)
				}
			}
		})
	}
}

// A bundle published image-based is compared through its image.
func TestAddComparesWithImageBundles(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	dir := initPackage(t, "w")
	v1 := catalogtest.PushBundleImage(t, host, catalogtest.BundleSpec{Pkg: "w", Version: "0.1.0", Channels: "stable", CRD: widgetCRD(sizeAndColor)})
	if _, err := Add(t.Context(), AddOptions{Dir: dir, BundleImage: v1}); err != nil {
		t.Fatal(err)
	}
	_, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "0.2.0", Channels: "stable", CRD: widgetCRD(colorOnly)})})
	if !errors.Is(err, crddiff.ErrUnsafe) || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("error %v, want the removal of spec.size refused", err)
	}
}

// A previous bundle whose image cannot be pulled (published with --image
// before the push) is not compared: a warning, not a refusal.
func TestAddWarnsWhenAPreviousImageCannotBePulled(t *testing.T) {
	dir := initPackage(t, "w")
	if _, err := Add(t.Context(), AddOptions{Dir: dir, Image: "127.0.0.1:1/w-bundle:v0.1.0",
		BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "0.1.0", Channels: "stable", CRD: widgetCRD(sizeAndColor)})}); err != nil {
		t.Fatal(err)
	}
	res, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: "0.2.0", Channels: "stable", CRD: widgetCRD(colorOnly)})})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not compared with those of w.v0.1.0") {
		t.Errorf("warnings %q, want one about w.v0.1.0", res.Warnings)
	}
}

// widgetCRDVersions is package w's CRD with the versions given, as
// "name" or "name*" for the storage one, each with schema sizeAndColor.
func widgetCRDVersions(versions ...string) string {
	out := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.w.example.com
spec:
  group: w.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
`
	for _, v := range versions {
		name, storage := strings.CutSuffix(v, "*")
		out += fmt.Sprintf(`  - name: %s
    served: true
    storage: %v
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {%s}
`, name, storage, sizeAndColor)
	}
	return out
}

// A release that drops an old API version (after one that added its
// successor as the storage version) cannot be reached straight from the
// releases that stored CRs in the old version: its skipRange starts above
// them, and catalog add accepts it, saying so. Dropping what the replaced
// release stores is refused.
func TestAddKeepsClustersOffDroppedStoredVersions(t *testing.T) {
	type step struct {
		version  string
		versions []string
		// skipRange is the entry's placement once added; wantErr a refusal.
		skipRange, wantErr, wantNote string
	}
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "the old version dropped after the new one became the storage version",
		steps: []step{
			{version: "0.1.0", versions: []string{"v1alpha1*"}},
			{version: "0.2.0", versions: []string{"v1alpha1", "v1beta1*"}, skipRange: ">=0.1.0 <0.2.0"},
			{version: "0.3.0", versions: []string{"v1beta1*"}, skipRange: ">=0.2.0 <0.3.0",
				wantNote: "w.v0.3.0 does not skip from w.v0.1.0 and older (widgets.w.example.com drops stored version(s) v1alpha1)"},
			// Later releases keep off 0.1.0 too, and 0.3.0 keeps its range.
			{version: "0.4.0", versions: []string{"v1beta1*"}, skipRange: ">=0.2.0 <0.4.0", wantNote: "w.v0.4.0 does not skip from w.v0.1.0 and older"},
		},
	}, {
		name: "the replaced release's storage version dropped",
		steps: []step{
			{version: "0.1.0", versions: []string{"v1alpha1*"}},
			{version: "0.2.0", versions: []string{"v1beta1*"}, wantErr: "since w.v0.1.0: widgets.w.example.com: storedVersionRemoval: stored version(s) v1alpha1 removed"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := initPackage(t, "w")
			for _, s := range tt.steps {
				res, err := Add(t.Context(), AddOptions{Dir: dir, BundleDir: catalogtest.WriteBundle(t, catalogtest.BundleSpec{Pkg: "w", Version: s.version, Channels: "stable", CRD: widgetCRDVersions(s.versions...)})})
				if s.wantErr != "" {
					if !errors.Is(err, crddiff.ErrUnsafe) || !strings.Contains(err.Error(), s.wantErr) {
						t.Fatalf("adding %s: %v, want a refusal with %q", s.version, err, s.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("adding %s: %v", s.version, err)
				}
				if len(res.Placements) != 1 || res.Placements[0].SkipRange != s.skipRange {
					t.Errorf("adding %s: placements %+v, want skipRange %q", s.version, res.Placements, s.skipRange)
				}
				if note := strings.Join(res.Warnings, "\n"); !strings.Contains(note, s.wantNote) || (s.wantNote == "") != (len(res.Warnings) == 0) {
					t.Errorf("adding %s: warnings %q, want %q", s.version, res.Warnings, s.wantNote)
				}
			}
			if tt.steps[len(tt.steps)-1].version == "0.4.0" {
				if cat := snapshot(t, dir); !strings.Contains(cat, "name: w.v0.3.0\n  replaces: w.v0.2.0\n  skipRange: '>=0.2.0 <0.3.0'") {
					t.Errorf("0.3.0's entry after 0.4.0 was added:\n%s", cat)
				}
			}
		})
	}
}
