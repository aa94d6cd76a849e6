package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/scaffold"
)

// readBase returns the project's base CSV, written first when the project
// has none, and the project's manifests.
func (g *generation) readBase() (*v1alpha1.ClusterServiceVersion, *projectManifests, error) {
	basePath, err := g.ensureBaseCSV()
	if err != nil {
		return nil, nil, err
	}
	// config/manifests lists the base CSV: it is written first.
	m, err := loadManifests(g.opts.Dir)
	if err != nil {
		return nil, nil, err
	}
	csv, err := g.baseCSV(m, basePath)
	return csv, m, err
}

// ensureBaseCSV writes a new base CSV when the project has none, and returns
// its path.
func (g *generation) ensureBaseCSV() (string, error) {
	proj := g.project
	basePath := filepath.Join(g.opts.Dir, "config", "manifests", "bases", proj.ProjectName+".clusterserviceversion.yaml")
	if exists(basePath) {
		return basePath, nil
	}
	// What init writes, from what the first chart says about itself;
	// generic without one.
	data, warnings, err := scaffold.BaseCSV(g.opts.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if data, err = csvToYAML(baseCSV(proj.ProjectName, proj.Domain)); err != nil {
			return "", err
		}
	case err != nil:
		return "", err
	}
	for _, w := range warnings {
		g.warn("%s", w)
	}
	if err := atomicfile.WriteFile(basePath, data, 0o644); err != nil {
		return "", err
	}
	g.res.CreatedBase = true
	g.warn("wrote a new base CSV %s: check its description, provider, links, icon and maintainers", basePath)
	return basePath, nil
}

// baseCSV reads the project's base CSV without its version: the bundle's is
// --version's.
func (g *generation) baseCSV(m *projectManifests, basePath string) (*v1alpha1.ClusterServiceVersion, error) {
	base := m.csv
	if base == nil {
		g.warn("config/manifests does not list the base CSV; read %s directly", basePath)
		data, err := os.ReadFile(basePath)
		if err != nil {
			return nil, err
		}
		base = &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &base.Object); err != nil {
			return nil, fmt.Errorf("%s: %w", basePath, err)
		}
	}
	// The version is --version's: one the base holds (operator-sdk's
	// bases may say 0.0.0, an edited one anything) is not read, so that it
	// cannot fail the CSV's lenient version parse with a message about
	// a version that is not used.
	base = base.DeepCopy()
	if v, ok, _ := unstructured.NestedFieldNoCopy(base.Object, "spec", "version"); ok && fmt.Sprint(v) != "0.0.0" && fmt.Sprint(v) != g.opts.Version {
		g.warn("the base CSV's spec.version %v is not used: the bundle's version is --version %s", v, g.opts.Version)
	}
	unstructured.RemoveNestedField(base.Object, "spec", "version")
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := fromUnstructured(base, csv); err != nil {
		return nil, fmt.Errorf("base CSV: %w", err)
	}
	return csv, nil
}

// baseCSV returns a new base CSV for a project without one: the fields an
// author edits, with sane defaults. Owned APIs are filled from the CRDs
// when the bundle is generated.
func baseCSV(projectName, domain string) *v1alpha1.ClusterServiceVersion {
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.ClusterServiceVersionAPIVersion, Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        projectName + ".v0.0.0",
			Namespace:   "placeholder",
			Annotations: map[string]string{AnnotationALMExamples: "[]", AnnotationCapabilities: LevelBasicInstall.String()},
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:  displayName(projectName),
			Description:  projectName + " runs Helm charts as a Kubernetes operator (built with chartpilot).",
			Keywords:     []string{projectName},
			Maturity:     "alpha",
			Provider:     v1alpha1.AppLink{Name: domain},
			InstallModes: defaultInstallModes(),
		},
	}
	return csv
}
