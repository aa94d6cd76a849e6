package catalog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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

// lockDir takes the catalog directory's writer lock (flock on LockPath),
// waiting while another writer, in this process or another, holds it, until
// ctx is done. Every change (Init, Add, Remove, Deprecate) reads the package
// file, changes it and writes it back under the lock, so concurrent writers
// serialize instead of losing each other's changes. The kernel releases the
// lock if the process dies; the lock file stays (removing it would let two
// writers lock two different files).
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
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
	return unlock, nil
}
