package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The store keeps everything under one directory:
//
//	volumes/<id>/        a volume's files (what NodePublishVolume bind-mounts)
//	volumes/<id>.json    its record
//	snapshots/<id>/      a copy of the source volume's files when the snapshot was taken
//	snapshots/<id>.json  its record
//
// A directory appears under its final name only once complete (it is
// written under a .tmp name and renamed), and its record is written after
// it: a record names a whole copy.
type store struct{ dir string }

// Kinds of objects the store holds, as directories under its root.
const (
	volumesDir   = "volumes"
	snapshotsDir = "snapshots"
	tmpSuffix    = ".tmp"
)

// volumeMode is a new volume's mode, an emptyDir's: any pod user may
// write, as the kubelet applies fsGroup to CSI volumes only for pods that
// set one.
const volumeMode fs.FileMode = 0o777

// volume is a volume's record.
type volume struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Capacity int64  `json:"capacity"`
	// SourceSnapshot or SourceVolume is what the volume was filled from.
	SourceSnapshot string `json:"sourceSnapshot,omitempty"`
	SourceVolume   string `json:"sourceVolume,omitempty"`
}

// snapshot is a snapshot's record.
type snapshot struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SourceVolume string    `json:"sourceVolume"`
	CreatedAt    time.Time `json:"createdAt"`
	// RestoreSize is the source volume's capacity: a volume restored from
	// the snapshot needs at least that much.
	RestoreSize int64 `json:"restoreSize"`
	// Bytes is what the copy's regular files hold.
	Bytes int64 `json:"bytes"`
}

// idFor derives an object's ID from its name, so that a repeated create
// finds the object the first one made (CSI's idempotency) and an ID is
// always a safe file name.
func idFor(kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	prefix := "vol-"
	if kind == snapshotsDir {
		prefix = "snap-"
	}
	return prefix + hex.EncodeToString(sum[:12])
}

// validID accepts what idFor makes and nothing that could leave the store.
func validID(id string) bool {
	if id == "" || len(id) > 64 || id == "." || id == ".." {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

func (s store) path(kind, id string) string { return filepath.Join(s.dir, kind, id) }

func (s store) init() error {
	for _, k := range []string{volumesDir, snapshotsDir} {
		if err := os.MkdirAll(filepath.Join(s.dir, k), 0o700); err != nil {
			return err
		}
		// Leftovers of copies a crash interrupted.
		tmps, _ := filepath.Glob(filepath.Join(s.dir, k, "*"+tmpSuffix))
		for _, t := range tmps {
			if err := os.RemoveAll(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// snapshots reads every snapshot's record, in ID order.
func (s store) snapshots() ([]snapshot, error) {
	records, err := filepath.Glob(filepath.Join(s.dir, snapshotsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []snapshot
	for _, r := range records {
		var snap snapshot
		if err := s.record(snapshotsDir, strings.TrimSuffix(filepath.Base(r), ".json"), &snap); err != nil {
			if errors.Is(err, errNotFound) {
				continue // deleted meanwhile
			}
			return nil, err
		}
		out = append(out, snap)
	}
	return out, nil
}

// errNotFound is returned for an object the store does not hold.
var errNotFound = errors.New("not found")

// record reads an object's record into v.
func (s store) record(kind, id string, v any) error {
	if !validID(id) {
		return fmt.Errorf("%s %q: %w", kind, id, errNotFound)
	}
	data, err := os.ReadFile(s.path(kind, id) + ".json")
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s %q: %w", kind, id, errNotFound)
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("reading the record of %s %s: %w", kind, id, err)
	}
	return nil
}

// writeRecord writes an object's record atomically.
func (s store) writeRecord(kind, id string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	final := s.path(kind, id) + ".json"
	tmp := final + tmpSuffix
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// fill makes the object's directory: a copy of from, or an empty volume
// when from is empty. It returns the bytes copied.
func (s store) fill(kind, id, from string) (int64, error) {
	final := s.path(kind, id)
	tmp := final + tmpSuffix
	if err := os.RemoveAll(tmp); err != nil {
		return 0, err
	}
	var n int64
	if from == "" {
		if err := os.Mkdir(tmp, volumeMode); err != nil {
			return 0, err
		}
		if err := os.Chmod(tmp, volumeMode); err != nil { // past the umask
			return 0, err
		}
	} else {
		var err error
		if n, err = copyTree(from, tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return 0, err
		}
	}
	if err := os.RemoveAll(final); err != nil {
		return 0, err
	}
	return n, os.Rename(tmp, final)
}

// remove deletes an object and its record; a missing one is no error.
func (s store) remove(kind, id string) error {
	if !validID(id) {
		return nil
	}
	if err := os.Remove(s.path(kind, id) + ".json"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.RemoveAll(s.path(kind, id))
}

// copyTree copies the tree at src to dst (which must not exist) keeping
// modes, owners, times and symbolic links, as a backup must: restored
// files belong to the operand's user. It returns the bytes of the regular
// files. Hard links become separate files; devices, sockets and pipes are
// skipped (a volume's data holds none that matter).
func copyTree(src, dst string) (int64, error) {
	var total int64
	var dirs []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, rel)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
			return chown(target, info)
		case d.Type().IsRegular():
			n, err := copyFile(path, target, info)
			total += n
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("copying %s: %w", src, err)
	}
	// Directories last, deepest first: writing into one changes its time,
	// and a read-only one could not be filled.
	for _, rel := range slices.Backward(dirs) {
		info, err := os.Lstat(filepath.Join(src, rel))
		if err != nil {
			return total, err
		}
		if err := setMeta(filepath.Join(dst, rel), info); err != nil {
			return total, err
		}
	}
	return total, nil
}

func copyFile(src, dst string, info fs.FileInfo) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	// *os.File to *os.File: the kernel copies (copy_file_range).
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	return n, setMeta(dst, info)
}

// setMeta gives path the owner, mode and times of info.
func setMeta(path string, info fs.FileInfo) error {
	if err := chown(path, info); err != nil {
		return err
	}
	if err := os.Chmod(path, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return os.Chtimes(path, info.ModTime(), info.ModTime())
}

func chown(path string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		return nil // only root can give files away
	}
	return os.Lchown(path, int(st.Uid), int(st.Gid))
}
