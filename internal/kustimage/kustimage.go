package kustimage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
)

// Aliases returns name and every name the `images:` entries of the
// kustomization tree rooted at dir rename it to (newName), transitively,
// name first. Only local directories of resources and components are
// followed; remote ones are left alone.
func Aliases(dir, name string) ([]string, error) {
	entries, err := imageEntries(dir, map[string]bool{})
	if err != nil {
		return nil, err
	}
	names := []string{name}
	for i := 0; i < len(names); i++ {
		for _, e := range entries {
			if e.Name == names[i] && e.NewName != "" && !slices.Contains(names, e.NewName) {
				names = append(names, e.NewName)
			}
		}
	}
	return names, nil
}

// imageEntries gathers the images entries of the kustomization in dir and
// of the local directories it builds on.
func imageEntries(dir string, seen map[string]bool) ([]types.Image, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if seen[abs] {
		return nil, nil
	}
	seen[abs] = true
	k, err := load(abs)
	if err != nil || k == nil {
		return nil, err
	}
	out := slices.Clone(k.Images)
	for _, r := range slices.Concat(k.Resources, k.Components) {
		sub := filepath.Join(abs, r)
		if filepath.IsAbs(r) {
			sub = r
		}
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			continue // a file, or a remote base
		}
		more, err := imageEntries(sub, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// load reads the kustomization file of dir; nil when there is none.
func load(dir string) (*types.Kustomization, error) {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		k := &types.Kustomization{}
		if err := k.Unmarshal(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		k.FixKustomization()
		return k, nil
	}
	return nil, nil
}
