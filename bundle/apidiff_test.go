package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The webapp CRD's config.greeting field, as bundle generate writes it.
const greetingField = "                  greeting:\n                    nullable: true\n                    x-kubernetes-int-or-string: true\n"

// validate --previous compares the bundle's CRDs with the previous
// bundle's, from a directory or an image: a removed field is an error
// naming the CRD file, the version and field, why and what to do; a
// warning with AllowUnsafeAPIChanges; nothing when the CRDs are the same.
func TestValidatePrevious(t *testing.T) {
	dir := generatedProject(t)
	prevDir := filepath.Join(t.TempDir(), "previous")
	if err := os.CopyFS(prevDir, os.DirFS(filepath.Join(dir, "bundle"))); err != nil {
		t.Fatal(err)
	}
	img, err := BuildImage(prevDir)
	if err != nil {
		t.Fatal(err)
	}
	prevImage := startRegistry(t) + "/webapp-operator-bundle:v0.1.0"
	ref, err := name.ParseReference(prevImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}

	const crdFile = "manifests/charts.example.com_webapps.yaml"
	tests := []struct {
		name     string
		previous string
		allow    bool
		// edit changes the new bundle
		edit      func(t *testing.T, bundleDir string)
		wantLevel string // "" for no finding about API changes
	}{
		{name: "same CRDs", previous: prevDir, edit: func(*testing.T, string) {}},
		{name: "field removed", previous: prevDir, wantLevel: levelError, edit: removeGreeting},
		{name: "field removed, previous image", previous: prevImage, wantLevel: levelError, edit: removeGreeting},
		{name: "field removed, allowed", previous: prevDir, allow: true, wantLevel: levelWarning, edit: removeGreeting},
		{name: "optional field added", previous: prevDir, edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, crdFile), greetingField, greetingField+"                  farewell:\n                    type: string\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bundleDir := filepath.Join(t.TempDir(), "bundle")
			if err := os.CopyFS(bundleDir, os.DirFS(prevDir)); err != nil {
				t.Fatal(err)
			}
			tt.edit(t, bundleDir)
			rep, err := Validate(ValidateOptions{Dir: bundleDir, Previous: tt.previous, AllowUnsafeAPIChanges: tt.allow})
			if rep == nil {
				t.Fatal(err)
			}
			var found []Finding
			for _, f := range rep.Findings {
				if f.Type == FindingTypeUnsafeAPIChange {
					found = append(found, f)
				}
			}
			if tt.wantLevel == "" {
				if len(found) > 0 || err != nil {
					t.Fatalf("findings %+v, error %v; want none", found, err)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("API change findings %+v, want 1", found)
			}
			f := found[0]
			if f.Level != tt.wantLevel || f.File != crdFile || f.Field != "v1alpha1 spec.config.greeting" ||
				!strings.Contains(f.Message, "existingFieldRemoval") || !strings.Contains(f.Message, "keep the field") {
				t.Errorf("finding %+v", f)
			}
			if gotErr := errors.Is(err, ErrInvalid); gotErr != (tt.wantLevel == levelError) {
				t.Errorf("error %v, want ErrInvalid: %v", err, tt.wantLevel == levelError)
			}
		})
	}
}

func removeGreeting(t *testing.T, d string) {
	replaceInFile(t, filepath.Join(d, "manifests", "charts.example.com_webapps.yaml"), greetingField, "")
}

func TestValidatePreviousNotABundle(t *testing.T) {
	dir := generatedProject(t)
	_, err := Validate(ValidateOptions{Dir: filepath.Join(dir, "bundle"), Previous: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--previous") || !strings.Contains(err.Error(), "no manifests directory") {
		t.Errorf("error %v, want one naming --previous and the missing manifests", err)
	}
}
