package ociimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/chartpilot/chartpilot/internal/flock"
)

// ErrNotInStore means no image was built under a reference.
var ErrNotInStore = errors.New("no image built under this reference")

// Store keeps built images between `build` and `push`: one OCI image
// layout whose index names each image by its full reference (the
// org.opencontainers.image.ref.name annotation). A new build under the same
// reference replaces the old one, and the blobs no image refers to any more
// are removed, so that rebuilding does not fill the disk. Writers and
// pushers take the store's lock (a sibling file, Dir + ".lock").
type Store struct {
	// Dir is the OCI layout directory.
	Dir string
}

// DefaultStoreDir is $XDG_CACHE_HOME/chartpilot/images (~/.cache/... when
// unset): built images are a cache, rebuilt from their sources any time.
func DefaultStoreDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("image store: %w", err)
	}
	return filepath.Join(dir, "chartpilot", "images"), nil
}

// key is the reference as stored: fully qualified, so that "op:v1" and
// "index.docker.io/library/op:v1" are the same image.
func key(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	return r.Name(), nil
}

func (s Store) open() (layout.Path, error) {
	if p, err := layout.FromPath(s.Dir); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o755); err != nil {
		return "", err
	}
	p, err := layout.Write(s.Dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("image store %s: %w", s.Dir, err)
	}
	return p, nil
}

// lock takes the store's lock: a Put's garbage collection must not remove
// the blobs another Put is writing, or a Push is reading.
func (s Store) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(s.Dir)), 0o755); err != nil {
		return nil, fmt.Errorf("image store %s: %w", s.Dir, err)
	}
	unlock, err := flock.Lock(ctx, filepath.Clean(s.Dir)+".lock")
	if err != nil {
		return nil, fmt.Errorf("image store %s: %w", s.Dir, err)
	}
	return unlock, nil
}

// Put stores an image or image index under ref, replacing what was there,
// and removes the blobs left unreferenced.
func (s Store) Put(t remote.Taggable, ref string) error {
	k, err := key(ref)
	if err != nil {
		return err
	}
	unlock, err := s.lock(context.Background())
	if err != nil {
		return err
	}
	defer unlock()
	p, err := s.open()
	if err != nil {
		return err
	}
	m := match.Annotation(RefNameAnnotation, k)
	opt := layout.WithAnnotations(map[string]string{RefNameAnnotation: k})
	switch t := t.(type) {
	case v1.ImageIndex:
		err = p.ReplaceIndex(t, m, opt)
	case v1.Image:
		err = p.ReplaceImage(t, m, opt)
	default:
		err = fmt.Errorf("%T is neither an image nor an index", t)
	}
	if err != nil {
		return fmt.Errorf("image store %s: %w", s.Dir, err)
	}
	garbage, err := p.GarbageCollect()
	if err != nil {
		return fmt.Errorf("image store %s: collecting unreferenced blobs: %w", s.Dir, err)
	}
	for _, h := range garbage {
		if err := p.RemoveBlob(h); err != nil {
			return fmt.Errorf("image store %s: %w", s.Dir, err)
		}
	}
	return nil
}

// Get returns what was stored under ref: a v1.Image or a v1.ImageIndex.
func (s Store) Get(ref string) (remote.Taggable, error) {
	k, err := key(ref)
	if err != nil {
		return nil, err
	}
	p, err := layout.FromPath(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (the store %s is empty; build it first)", ErrNotInStore, ref, s.Dir)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(im.Manifests, func(d v1.Descriptor) bool { return d.Annotations[RefNameAnnotation] == k })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s (in %s; build it first)", ErrNotInStore, ref, s.Dir)
	}
	d := im.Manifests[i]
	if d.MediaType.IsIndex() {
		return idx.ImageIndex(d.Digest)
	}
	return idx.Image(d.Digest)
}

// Push pushes what was stored under ref to ref.
func (s Store) Push(ctx context.Context, ref string) (v1.Hash, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return v1.Hash{}, err
	}
	defer unlock()
	t, err := s.Get(ref)
	if err != nil {
		return v1.Hash{}, err
	}
	return Push(ctx, t, ref)
}
