package mover

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Result is what a mover reports through its termination message.
type Result struct {
	// Size is the bytes of the archive written or read.
	Size int64 `json:"size"`
	// Files counts the regular files copied.
	Files int64 `json:"files"`
	// Error says why the copy failed; empty on success.
	Error string `json:"error,omitempty"`
}

// ParseResult reads a termination message.
func ParseResult(msg string) (Result, error) {
	var r Result
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		return r, fmt.Errorf("the mover's termination message %q: %w", msg, err)
	}
	return r, nil
}

// byteCounter counts the bytes written to it: those of an archive, teed.
type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// Archive writes the files under dir to w as tar+gzip: directories, regular
// files, symlinks, with their modes, owners and times. Sockets, devices and
// pipes are skipped: they hold no data.
func Archive(dir string, w io.Writer) (Result, error) {
	var size byteCounter
	zw, _ := gzip.NewWriterLevel(io.MultiWriter(w, &size), gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	var res Result
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		case info.Mode().IsDir(), info.Mode().IsRegular():
		default:
			return nil
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uname, hdr.Gname = "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		res.Files++
		return copyFile(tw, path)
	})
	if err != nil {
		return res, fmt.Errorf("archiving %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return res, err
	}
	if err := zw.Close(); err != nil {
		return res, err
	}
	res.Size = int64(size)
	return res, nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// ArchiveFile archives dir into file, written beside it first and renamed
// once complete: a file of that name is always a whole archive, so a copy
// that stopped half way leaves nothing a restore could take for data.
func ArchiveFile(dir, file string) (Result, error) {
	if err := retryDenied(func() error { return os.MkdirAll(filepath.Dir(file), 0o755) }); err != nil {
		return Result{}, fmt.Errorf("creating the archive's folder: %w", err)
	}
	tmp := file + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return Result{}, fmt.Errorf("creating %s: %w", tmp, err)
	}
	res, err := Archive(dir, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return res, err
}

// Extract writes the files of a tar+gzip archive read from r under dir.
// Entries that would land outside dir are refused. Owners are kept only
// when running as root (otherwise the files are the mover's user's).
func Extract(r io.Reader, dir string) (Result, error) {
	var size byteCounter
	cr := io.TeeReader(r, &size)
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return Result{}, fmt.Errorf("reading the archive: %w", err)
	}
	tr := tar.NewReader(zr)
	var res Result
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, fmt.Errorf("extracting the archive: %w", err)
	}
	defer root.Close()
	// Directories get their modes and times last: a read-only one would
	// refuse its files, and each file written would change its time.
	var dirs []*tar.Header
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("reading the archive: %w", err)
		}
		name := strings.TrimSuffix(filepath.FromSlash(hdr.Name), string(filepath.Separator))
		if !filepath.IsLocal(name) {
			return res, fmt.Errorf("archive entry %q: outside the volume", hdr.Name)
		}
		if err := extractEntry(root, tr, hdr, name); err != nil {
			return res, fmt.Errorf("archive entry %q: %w", hdr.Name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			res.Files++
		case tar.TypeDir:
			dirs = append(dirs, hdr)
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		name := strings.TrimSuffix(filepath.FromSlash(dirs[i].Name), string(filepath.Separator))
		if err := setAttributes(root, dirs[i], name); err != nil {
			return res, fmt.Errorf("archive entry %q: %w", dirs[i].Name, err)
		}
	}
	// The rest of the stream (tar's padding) counts toward the size read.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return res, fmt.Errorf("reading the archive: %w", err)
	}
	res.Size = int64(size)
	return res, nil
}

func extractEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string) error {
	mode := fs.FileMode(hdr.Mode).Perm()
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
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
	case tar.TypeSymlink:
		_ = root.Remove(name)
		if err := root.Symlink(hdr.Linkname, name); err != nil {
			return err
		}
		return nil
	default:
		return nil
	}
	return setAttributes(root, hdr, name)
}

// setAttributes gives an extracted file or directory its archived mode,
// times and (as root) owner.
func setAttributes(root *os.Root, hdr *tar.Header, name string) error {
	mode := fs.FileMode(hdr.Mode).Perm()
	if os.Geteuid() == 0 {
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
	}
	if err := root.Chmod(name, mode); err != nil {
		return err
	}
	return root.Chtimes(name, hdr.ModTime, hdr.ModTime)
}

// deniedWait is how long a volume that refuses to be written is given:
// some provisioners (the local cluster's hostPath one) set a new volume's
// mode a moment after a pod may already mount it.
var deniedWait = 30 * time.Second

// retryDenied runs f until it is not refused permission, for deniedWait.
func retryDenied(f func() error) error {
	deadline := time.Now().Add(deniedWait)
	for {
		err := f()
		if !errors.Is(err, fs.ErrPermission) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitWritable waits, for deniedWait, until a file can be created in dir.
func waitWritable(dir string) error {
	return retryDenied(func() error {
		f, err := os.CreateTemp(dir, ".chartpilot-probe-*")
		if err != nil {
			return err
		}
		f.Close()
		return os.Remove(f.Name())
	})
}

// ExtractFile extracts the archive file under dir.
func ExtractFile(file, dir string) (Result, error) {
	if err := waitWritable(dir); err != nil {
		return Result{}, fmt.Errorf("the volume %s: %w", dir, err)
	}
	f, err := os.Open(file)
	if err != nil {
		return Result{}, fmt.Errorf("opening the archive: %w", err)
	}
	defer f.Close()
	return Extract(f, dir)
}

// Probe writes content to file (write) or checks that file holds it: what
// the scorecard's backup-restore test puts in a volume and looks for after
// the restore, from a pod of the operator's image (which has no shell).
func Probe(file, content string, write bool) (Result, error) {
	if write {
		if err := retryDenied(func() error { return os.WriteFile(file, []byte(content), 0o644) }); err != nil {
			return Result{}, fmt.Errorf("writing %s: %w", file, err)
		}
		return Result{Size: int64(len(content)), Files: 1}, nil
	}
	got, err := os.ReadFile(file)
	if err != nil {
		return Result{}, fmt.Errorf("reading %s: %w", file, err)
	}
	if string(got) != content {
		return Result{}, fmt.Errorf("%s holds %d bytes, not the %d expected", file, len(got), len(content))
	}
	return Result{Size: int64(len(got)), Files: 1}, nil
}

// RemoveArchives deletes the folder of a backup's archives on a target
// claim, reporting the files and bytes removed; a folder already gone is
// no error (a retried deletion).
func RemoveArchives(dir string) (Result, error) {
	var res Result
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			res.Files++
			res.Size += info.Size()
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return Result{}, nil
	}
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return res, fmt.Errorf("removing %s: %w", dir, err)
	}
	return res, nil
}
