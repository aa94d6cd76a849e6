package crddiff

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// readCRD reads one CRD from a testdata file.
func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	crds, err := FromObjects([]*unstructured.Unstructured{u})
	if err != nil || len(crds) != 1 {
		t.Fatalf("%s: %d CRDs, %v", path, len(crds), err)
	}
	return crds[0]
}

// readPair reads testdata/NAME/{old,new}.yaml.
func readPair(t *testing.T, name string) (old, new *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	dir := filepath.Join("testdata", name)
	return readCRD(t, filepath.Join(dir, "old.yaml")), readCRD(t, filepath.Join(dir, "new.yaml"))
}

// pairNames are the case directories under testdata.
func pairNames(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) < 20 {
		t.Fatalf("only %d CRD pairs under testdata", len(out))
	}
	return out
}
