package kustimage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestAliases(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// root is the kustomization built, relative to the tree.
		root, image string
		want        []string
	}{
		{name: "no images entry", root: "default", image: "controller", want: []string{"controller"},
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- ../manager\n",
				"manager/kustomization.yaml": "resources:\n- manager.yaml\n",
			}},
		{name: "kustomize edit set image in a base", root: "default", image: "controller", want: []string{"controller", "quay.io/old/op"},
			files: map[string]string{
				"default/kustomization.yaml": "resources:\n- ../crd\n- ../manager\n",
				"crd/kustomization.yml":      "resources: []\n",
				"manager/kustomization.yaml": "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: quay.io/old/op\n  newTag: v0.1.0\n",
			}},
		{name: "renamed twice, through a component and a legacy base", root: "manifests", image: "controller", want: []string{"controller", "a.example.com/op", "b.example.com/op"},
			files: map[string]string{
				"manifests/kustomization.yaml": "bases:\n- ../default\n",
				"default/kustomization.yaml":   "components:\n- ../comp\nresources:\n- ../manager\n",
				"comp/kustomization.yaml":      "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: a.example.com/op\n  newName: b.example.com/op\n",
				"manager/kustomization.yaml":   "images:\n- name: controller\n  newName: a.example.com/op\n",
			}},
		{name: "only a new tag keeps the name", root: "manager", image: "controller", want: []string{"controller"},
			files: map[string]string{"manager/kustomization.yaml": "images:\n- name: controller\n  newTag: v2\n"}},
		{name: "other images are not aliases", root: "manager", image: "controller", want: []string{"controller"},
			files: map[string]string{"manager/kustomization.yaml": "images:\n- name: nginx\n  newName: mirror.example.com/nginx\n"}},
		{name: "a cycle of bases ends", root: "a", image: "controller", want: []string{"controller", "x.example.com/op"},
			files: map[string]string{
				"a/kustomization.yaml": "resources:\n- ../b\n",
				"b/kustomization.yaml": "resources:\n- ../a\nimages:\n- name: controller\n  newName: x.example.com/op\n",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := write(t, tt.files)
			got, err := Aliases(filepath.Join(dir, tt.root), tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Aliases = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAliasesBadKustomization(t *testing.T) {
	dir := write(t, map[string]string{"kustomization.yaml": "imagez: []\n"})
	if _, err := Aliases(dir, "controller"); err == nil {
		t.Fatal("no error for an unknown field")
	}
}
