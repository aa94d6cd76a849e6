package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/internal/monitoringcrd"
)

// The CRDs of a directory are those of its YAML files, in the files'
// order, and nothing else; a directory without any is an error.
func TestCRDsIn(t *testing.T) {
	dir := t.TempDir()
	crd := func(name string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\n"
	}
	for name, data := range map[string]string{
		"b.yaml":     crd("b.example.com") + "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: olm\n---\n",
		"a.yaml":     crd("a.example.com"),
		"notes.txt":  crd("ignored.example.com"),
		"empty.yaml": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := crdsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	if got := strings.Join(names, ","); got != "a.example.com,b.example.com" {
		t.Errorf("CRDs %s, want a.example.com,b.example.com", got)
	}
	if _, err := crdsIn(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no CRDs found") {
		t.Errorf("crdsIn of an empty directory: %v, want an error", err)
	}
}

func TestMonitoringCRDs(t *testing.T) {
	crds, err := monitoringCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(monitoringcrd.CRDs()) {
		t.Fatalf("%d CRDs, want %d", len(crds), len(monitoringcrd.CRDs()))
	}
	for _, c := range crds {
		if c.GetKind() != "CustomResourceDefinition" || c.GetAPIVersion() != "apiextensions.k8s.io/v1" || !strings.HasSuffix(c.GetName(), "."+monitoringcrd.Group) {
			t.Errorf("%s %s %s, want a CRD of %s", c.GetAPIVersion(), c.GetKind(), c.GetName(), monitoringcrd.Group)
		}
	}
}
