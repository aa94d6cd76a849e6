package edit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/internal/flock"
)

// LockPath is the lock file of the catalog directory dir: a hidden sibling
// ".<name>.lock", outside the directory, so that neither operator-registry's
// loaders (which parse every file under the directory not named in an
// .indexignore) nor a catalog image built from the directory see it.
func LockPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+".lock"), nil
}

// stagingPath is where the writer holding the lock of the catalog
// directory dir builds files before renaming them into place: a hidden
// sibling ".<name>.staging" beside the lock file, outside the directory.
// operator-registry's loaders read every file under the directory, hidden
// ones too, so a temporary file left in it by a writer killed mid-write
// would make the catalog fail to load or hold a package twice.
func stagingPath(dir string) (string, error) {
	lock, err := LockPath(dir)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(lock, ".lock") + ".staging", nil
}

// ErrNoCatalogDir means the catalog directory does not exist: a writer
// other than Init refuses it, and creates no lock file beside it.
var ErrNoCatalogDir = errors.New("no catalog directory")

// lockDir takes the catalog directory's writer lock (flock on LockPath),
// waiting while another writer, in this process or another, holds it, until
// ctx is done. Every change (Init, Add, Remove, Deprecate) reads the package
// file, changes it and writes it back under the lock, so concurrent writers
// serialize instead of losing each other's changes. The kernel releases the
// lock if the process dies; the lock file stays (removing it would let two
// writers lock two different files), except when a failed Init removes the
// directory it created (see removeLock).
//
// dir must exist, before the lock (no lock file is left beside a mistyped
// directory) and once it is held (a failed Init may have removed it).
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	if err := checkCatalogDir(dir); err != nil {
		return nil, err
	}
	path, err := LockPath(dir)
	if err != nil {
		return nil, fmt.Errorf("locking catalog %s: %w", dir, err)
	}
	unlock, err = flock.Lock(ctx, path)
	if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
		return nil, fmt.Errorf("waiting for another writer of catalog %s (lock %s): %w", dir, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("locking catalog %s: %w", dir, err)
	}
	if err := checkCatalogDir(dir); err != nil {
		unlock()
		return nil, err
	}
	// What a killed writer left in the staging directory is of no use:
	// the holder of the lock removes it, and its own files when done.
	staging, err := stagingPath(dir)
	if err == nil {
		err = os.RemoveAll(staging)
	}
	if err != nil {
		unlock()
		return nil, fmt.Errorf("locking catalog %s: clearing the staging directory: %w", dir, err)
	}
	release := unlock
	return func() {
		os.RemoveAll(staging)
		release()
	}, nil
}

// checkCatalogDir tells whether dir is an existing directory.
func checkCatalogDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist (create it with `chartpilot catalog init`)", ErrNoCatalogDir, dir)
	case err != nil:
		return fmt.Errorf("catalog %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrNoCatalogDir, dir)
	}
	return nil
}

// removeLock removes the lock file of dir while its lock is held: only for
// a directory the holder created and removed again, which no other writer
// can have written to. A writer waiting on the removed file finds the
// directory gone once it holds the lock, and stops.
func removeLock(dir string) {
	if path, err := LockPath(dir); err == nil {
		os.Remove(path)
	}
}

// ErrCatalogUnreadable means a file of the catalog directory does not
// load: a writer refuses to add to it, since the catalog would stay one
// that `catalog validate`, opm and OLM reject.
var ErrCatalogUnreadable = errors.New("catalog does not load")

// lockCatalog takes the writer lock of dir (lockDir), then loads the whole
// catalog: a file that does not load is refused, named, before anything is
// written.
func lockCatalog(ctx context.Context, dir string) (unlock func(), err error) {
	unlock, err = lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	if _, err := fbc.Load(ctx, os.DirFS(dir)); err != nil {
		unlock()
		return nil, fmt.Errorf("%w: %s: %w; fix or remove that file (nothing was written)", ErrCatalogUnreadable, dir, err)
	}
	return unlock, nil
}
