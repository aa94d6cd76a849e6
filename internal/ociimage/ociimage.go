package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefNameAnnotation tags an image in an OCI layout's index.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Entry is one file or directory of a layer.
type Entry struct {
	// Name is the path in the image, without a leading slash.
	Name string
	// Dir makes the entry a directory.
	Dir bool
	// Data is a file's content.
	Data []byte
	// Mode is the permission bits (default 0o755 for directories, 0o644 for files).
	Mode int64
	// UID and GID own the entry (default root).
	UID, GID int
}

// Tar archives entries reproducibly: the parent directories of each entry
// first, everything sorted by name, zero times, numeric owners only.
func Tar(entries []Entry) ([]byte, error) {
	byName := map[string]Entry{}
	for _, e := range entries {
		e.Name = strings.Trim(path.Clean("/"+e.Name), "/")
		if e.Name == "" {
			continue
		}
		if prev, dup := byName[e.Name]; dup && !(prev.Dir && e.Dir) {
			return nil, fmt.Errorf("layer: %s twice", e.Name)
		}
		byName[e.Name] = e
		for dir := path.Dir(e.Name); dir != "."; dir = path.Dir(dir) {
			if _, ok := byName[dir]; !ok {
				byName[dir] = Entry{Name: dir, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := byName[n]
		h := &tar.Header{Name: n, Uid: e.UID, Gid: e.GID, Mode: e.Mode, Format: tar.FormatPAX}
		if e.Dir {
			h.Typeflag, h.Name = tar.TypeDir, n+"/"
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
			if h.Mode == 0 {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if !e.Dir {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DirEntries lists the tree of fsys as entries under prefix.
func DirEntries(fsys fs.FS, prefix string) ([]Entry, error) {
	var out []Entry
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		out = append(out, Entry{Name: prefix, Dir: true})
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		name := path.Join(prefix, p)
		switch {
		case d.IsDir():
			out = append(out, Entry{Name: name, Dir: true})
		case d.Type().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			out = append(out, Entry{Name: name, Data: data})
		default:
			return fmt.Errorf("%s is neither a file nor a directory", p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("archiving: %w", err)
	}
	return out, nil
}

// TarDir archives fsys under prefix, reproducibly.
func TarDir(fsys fs.FS, prefix string) ([]byte, error) {
	entries, err := DirEntries(fsys, prefix)
	if err != nil {
		return nil, err
	}
	return Tar(entries)
}

// Layer wraps an uncompressed tar as a layer of media type mt.
func Layer(data []byte, mt types.MediaType) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(mt))
}

// Config is what an image built on the empty base carries.
type Config struct {
	Platform   v1.Platform
	Labels     map[string]string
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
}

// Scratch builds an OCI image from the empty base: the layers in order and
// the config, with zero creation times, so that the same input gives the
// same digest.
func Scratch(layers [][]byte, c Config) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, data := range layers {
		l, err := Layer(data, types.OCILayer)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = c.Platform.OS, c.Platform.Architecture, c.Platform.Variant
	cf.Config.Labels = c.Labels
	cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.Env = c.Entrypoint, c.Cmd, c.Env
	cf.Config.User, cf.Config.WorkingDir = c.User, c.WorkingDir
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{})
}

// Index is an OCI image index of images, one per platform, in the order given.
func Index(imgs []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}},
		})
	}
	return idx, nil
}

func options(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// IsReference tells an image reference (registry/repo[:tag|@digest]) from
// a directory, for arguments that may be either: an existing directory
// always wins, and a reference names its registry and its tag or digest
// ("me/op:v1" and "quay.io/me/op" are paths).
func IsReference(arg string) bool {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return false
	}
	_, err := name.ParseReference(arg, name.StrictValidation)
	return err == nil && strings.Contains(arg, "/")
}

// Pull fetches an image with the docker credentials (~/.docker/config.json
// and its helpers). Registries on loopback and private addresses are
// spoken to over plain HTTP, as docker does.
func Pull(ctx context.Context, ref string) (v1.Image, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r, options(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	return img, nil
}

// Resolve asks the registry for the digest ref points at.
func Resolve(ctx context.Context, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	d, err := remote.Head(r, options(ctx)...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("resolving %s: %w", ref, err)
	}
	return d.Digest, nil
}

// Push pushes an image or an image index to ref with the docker credentials.
func Push(ctx context.Context, t remote.Taggable, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	switch t := t.(type) {
	case v1.ImageIndex:
		if err := remote.WriteIndex(r, t, options(ctx)...); err != nil {
			return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
		}
		return t.Digest()
	case v1.Image:
		if err := remote.Write(r, t, options(ctx)...); err != nil {
			return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
		}
		return t.Digest()
	}
	return v1.Hash{}, fmt.Errorf("pushing %s: %T is neither an image nor an index", ref, t)
}

// WriteOCILayout writes an image or index into an OCI image layout
// directory (created or appended to), tagged with tag through the
// org.opencontainers.image.ref.name annotation.
func WriteOCILayout(t remote.Taggable, dir, tag string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("writing OCI layout %s: %w", dir, err)
		}
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag}))
	}
	switch t := t.(type) {
	case v1.ImageIndex:
		err = p.AppendIndex(t, opts...)
	case v1.Image:
		err = p.AppendImage(t, opts...)
	default:
		err = fmt.Errorf("%T is neither an image nor an index", t)
	}
	if err != nil {
		return fmt.Errorf("writing OCI layout %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes an image as a docker-loadable tarball tagged ref.
func WriteTarball(img v1.Image, ref, file string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(file, r, img); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// ErrNothingExtracted means an image has no file under the directory asked for.
var ErrNothingExtracted = errors.New("no files")

// ExtractDir writes the regular files under root ("" for all) of the
// image's flattened filesystem into dir, which must not exist yet; on
// failure dir is not left behind.
func ExtractDir(img v1.Image, root, dir string) (err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading image: %w", err)
		}
		rel := path.Clean(strings.TrimPrefix(h.Name, "/"))
		ok := true
		if root != "" {
			rel, ok = strings.CutPrefix(rel, root+"/")
		}
		if !ok || !filepath.IsLocal(rel) {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			found = true
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	if !found {
		return ErrNothingExtracted
	}
	return nil
}
