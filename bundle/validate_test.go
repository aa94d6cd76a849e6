package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// Each broken bundle fails validation with a finding that names the file
// and the field.
func TestValidateFindings(t *testing.T) {
	const csvFile = "manifests/webapp-operator.clusterserviceversion.yaml"
	tests := []struct {
		name string
		// edit breaks the generated bundle
		edit func(t *testing.T, bundleDir string)
		opts ValidateOptions
		// withProject validates with the project the bundle came from;
		// file is then relative to the project.
		withProject bool
		file        string
		field       string
		msg         string
		level       string
	}{{
		name: "no package annotation",
		edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, registryv1.AnnotationsFile), "bundle.package.v1: webapp-operator", "bundle.package.v1: \"\"")
		},
		file:  registryv1.AnnotationsFile,
		field: "annotations." + registryv1.AnnotationPackage,
		msg:   "missing",
		level: levelError,
	}, {
		name: "not semver",
		edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, csvFile), "  version: 0.1.0", "  version: one")
		},
		file:  registryv1.ManifestsDir,
		msg:   "unable to parse CSV",
		level: levelError,
	}, {
		name: "an owned CRD the bundle lacks",
		edit: func(t *testing.T, d string) {
			removeFile(t, filepath.Join(d, "manifests", "charts.example.com_webapps.yaml"))
		},
		file:  csvFile,
		msg:   "Kind=Webapp\" not found in bundle",
		level: levelError,
	}, {
		name: "a removed API for the Kubernetes version",
		edit: func(t *testing.T, d string) {
			writeFile(t, filepath.Join(d, "manifests", "pdb.yaml"), "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: pdb\nspec:\n  maxUnavailable: 1\n")
		},
		opts:  ValidateOptions{KubeVersion: "1.25"},
		file:  csvFile,
		msg:   "PodDisruptionBudget",
		level: levelError,
	}, {
		name: "a removed CRD API under a chart's crds/, with the project",
		edit: func(t *testing.T, d string) {
			crds := filepath.Join(filepath.Dir(d), "helm-charts", "webapp", "crds")
			if err := os.MkdirAll(crds, 0o755); err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(filepath.Join("..", "chart", "testdata", "charts", "oldcrds", "crds", "gadgets.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(crds, "gadgets.yaml"), string(old))
		},
		withProject: true,
		file:        filepath.Join("helm-charts", "webapp", "crds", "gadgets.yaml"),
		msg:         "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served since Kubernetes 1.22: use apiVersion apiextensions.k8s.io/v1",
		level:       levelError,
	}, {
		name: "operatorhub: an unknown category",
		edit: func(t *testing.T, d string) {
			replaceInFile(t, filepath.Join(d, csvFile), "    capabilities: Basic Install\n", "    capabilities: Basic Install\n    categories: Gardening\n")
		},
		opts:  ValidateOptions{Suites: []string{SuiteOperatorHub}},
		file:  csvFile,
		msg:   "Gardening",
		level: levelError,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := generatedProject(t)
			bundleDir := filepath.Join(dir, "bundle")
			tt.edit(t, bundleDir)
			tt.opts.Dir = bundleDir
			if tt.withProject {
				tt.opts.Project = ProjectOf(bundleDir)
				tt.file = filepath.Join(dir, tt.file)
			}
			rep, err := Validate(tt.opts)
			if tt.level == levelError && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error = %v, want ErrInvalid", err)
			}
			var found bool
			for _, f := range rep.Findings {
				found = found || f.Level == tt.level && f.File == tt.file && (tt.field == "" || f.Field == tt.field) && strings.Contains(f.Message, tt.msg)
			}
			if !found {
				t.Errorf("no %s finding in %s %s about %q: %+v", tt.level, tt.file, tt.field, tt.msg, rep.Findings)
			}
		})
	}
}

func TestValidateNotABundle(t *testing.T) {
	if _, err := Validate(ValidateOptions{Dir: t.TempDir()}); err == nil || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is not a bundle directory") {
		t.Errorf("error = %v", err)
	}
	if _, err := Validate(ValidateOptions{Dir: t.TempDir(), Suites: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `unknown suite "nope"`) {
		t.Errorf("error = %v", err)
	}
	// Text output ends with the summary line.
	dir := generatedProject(t)
	rep, err := Validate(ValidateOptions{Dir: filepath.Join(dir, "bundle")})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "is valid: 0 error(s)") {
		t.Errorf("%q %v", b.String(), err)
	}
}

func TestProjectOf(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "proj", "watches.yaml"), "[]\n")
	for _, tt := range []struct{ bundle, want string }{
		{filepath.Join(dir, "proj", "bundle"), filepath.Join(dir, "proj")},
		{filepath.Join(dir, "proj", "bundle") + "/", filepath.Join(dir, "proj")},
		{filepath.Join(dir, "elsewhere", "bundle"), ""},
	} {
		if got := ProjectOf(tt.bundle); got != tt.want {
			t.Errorf("ProjectOf(%s) = %q, want %q", tt.bundle, got, tt.want)
		}
	}
}
