package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes data to path through a temporary file in the same
// directory and a rename, creating the directory if needed.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFileVia(filepath.Dir(path), path, data, perm)
}

// WriteFileVia is WriteFile with the temporary file in tmpDir, an existing
// directory on the same file system as path: for a directory whose readers
// read every file in it, which would read the temporary file a killed
// writer left there.
func WriteFileVia(tmpDir, path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(tmpDir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// MkdirTemp creates a new directory in dir, named from pattern as
// os.MkdirTemp names it (the last "*" is replaced by a random string), to
// be filled and then renamed into place. Unlike os.MkdirTemp, which makes
// it 0o700, its mode is 0o777 less the umask, as mkdir makes a directory:
// renamed into place, it is what the user would have created.
func MkdirTemp(dir, pattern string) (string, error) {
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for range 10000 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix)
		err := os.Mkdir(name, 0o777)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating a temporary directory in %s: %w", dir, err)
		}
	}
	return "", fmt.Errorf("creating a temporary directory in %s: too many names taken", dir)
}
