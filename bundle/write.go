package bundle

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
	"github.com/chartpilot/chartpilot/internal/registryv1"
)

// write adds the CSV and writes the bundle and bundle.Dockerfile where
// they changed.
func (g *generation) write(files map[string][]byte, csv *v1alpha1.ClusterServiceVersion, pkg string, df []byte) error {
	if err := g.csvFile(files, csv, pkg); err != nil {
		return err
	}
	g.res.Files = sortedKeys(files)
	if sameTree(g.opts.OutputDir, files) {
		g.res.Unchanged = true
	} else if err := writeTree(g.opts.OutputDir, files); err != nil {
		return err
	}
	dfPath := filepath.Join(g.opts.Dir, DockerfileName)
	if old, err := os.ReadFile(dfPath); err != nil || !bytes.Equal(old, df) {
		if err := atomicfile.WriteFile(dfPath, df, 0o644); err != nil {
			return err
		}
		g.res.Unchanged = false
	}
	return nil
}

// previousCreatedAt reads the createdAt of the bundle on disk.
func previousCreatedAt(bundleDir, csvFile string) string {
	data, err := os.ReadFile(filepath.Join(bundleDir, csvFile))
	if err != nil {
		return ""
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if yaml.Unmarshal(data, &csv) != nil {
		return ""
	}
	return csv.Metadata.Annotations[AnnotationCreatedAt]
}

// sameTree reports whether dir holds exactly files.
func sameTree(dir string, files map[string][]byte) bool {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		want, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return errDiffers
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			return errDiffers
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

var errDiffers = errors.New("differs")

// writeTree replaces dir by a directory holding exactly files: written
// aside, then renamed into place.
func writeTree(dir string, files map[string][]byte) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := atomicfile.MkdirTemp(parent, "."+filepath.Base(dir)+".new-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	for name, data := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	old := ""
	if exists(dir) {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// csvFile adds the CSV, its createdAt fixed when asked, else kept when
// nothing else changed, else now.
func (g *generation) csvFile(files map[string][]byte, csv *v1alpha1.ClusterServiceVersion, pkg string) error {
	name := registryv1.ManifestsDir + "/" + pkg + ".clusterserviceversion.yaml"
	g.res.CSV = csv.Name
	render := func(createdAt string) error {
		csv.Annotations[AnnotationCreatedAt] = createdAt
		data, err := csvToYAML(csv)
		if err != nil {
			return err
		}
		files[name] = data
		return nil
	}
	now := func() string { return g.opts.now().UTC().Format(time.RFC3339) }
	switch prev := previousCreatedAt(g.opts.OutputDir, name); {
	case g.opts.CreatedAt != nil:
		return render(g.opts.CreatedAt.UTC().Format(time.RFC3339))
	case prev != "":
		if err := render(prev); err != nil || sameTree(g.opts.OutputDir, files) {
			return err
		}
		return render(now())
	default:
		return render(now())
	}
}
