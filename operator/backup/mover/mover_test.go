package mover

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A tree archived and extracted elsewhere comes back with its contents,
// modes and links, and the sizes reported are the archive's.
func TestRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{"marker": "hello", "db/data.bin": strings.Repeat("x", 1<<20), "db/ro/conf": "ro"}
	for name, data := range files {
		path := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("db/data.bin", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "db", "ro"), 0o555); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "sub", "v.tar.gz")
	wrote, err := ArchiveFile(src, archive)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	if wrote.Size != st.Size() || wrote.Files != 3 {
		t.Errorf("archive result %+v, want size %d and 3 files", wrote, st.Size())
	}
	if _, err := os.Stat(archive + ".partial"); !os.IsNotExist(err) {
		t.Errorf("the partial file is left: %v", err)
	}
	dst := t.TempDir()
	read, err := ExtractFile(archive, dst)
	if err != nil {
		t.Fatal(err)
	}
	if read.Size != st.Size() || read.Files != 3 {
		t.Errorf("extract result %+v, want size %d and 3 files", read, st.Size())
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != data {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
		fi, _ := os.Stat(filepath.Join(dst, name))
		if fi != nil && fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640", name, fi.Mode().Perm())
		}
	}
	if link, err := os.Readlink(filepath.Join(dst, "link")); err != nil || link != "db/data.bin" {
		t.Errorf("link = %q, %v", link, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "db", "ro")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("read-only dir: %v, %v", fi, err)
	}
	_ = os.Chmod(filepath.Join(dst, "db", "ro"), 0o755)
	_ = os.Chmod(filepath.Join(src, "db", "ro"), 0o755)
}

// An archive whose entries climb out of the volume is refused.
func TestExtractRefusesEscapes(t *testing.T) {
	for _, name := range []string{"../evil", "/etc/evil", "a/../../evil"} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("x"))
		_ = tw.Close()
		_ = zw.Close()
		dir := t.TempDir()
		if _, err := Extract(&buf, dir); err == nil {
			t.Errorf("%s: extracted, want refused", name)
		}
	}
}

// A result survives its termination message.
func TestParseResult(t *testing.T) {
	r, err := ParseResult(`{"size":12,"files":3}`)
	if err != nil || r.Size != 12 || r.Files != 3 {
		t.Errorf("%+v %v", r, err)
	}
	if _, err := ParseResult("panic: boom"); err == nil {
		t.Error("a message that is not a result parsed")
	}
}

// A volume whose mode is fixed a moment after the mover starts (as the
// local cluster's hostPath provisioner does) is waited for. Root writes
// anywhere, so as root (CI) the test runs as an unprivileged user.
func TestWaitsForAWritableVolume(t *testing.T) {
	if !unprivileged(t) {
		return
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(time.Second); _ = os.Chmod(dir, 0o700) }()
	if _, err := ArchiveFile(t.TempDir(), filepath.Join(dir, "a", "v.tar.gz")); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveArchives(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ns", "nightly")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.tar.gz": "12345", "b.tar.gz.partial": "123"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := RemoveArchives(dir)
	if err != nil || res.Files != 2 || res.Size != 8 {
		t.Fatalf("RemoveArchives: %+v, %v", res, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
	// Retried after a success: nothing to do, no error.
	if res, err := RemoveArchives(dir); err != nil || res.Files != 0 {
		t.Errorf("second RemoveArchives: %+v, %v", res, err)
	}
}

// unprivilegedUID is the user root's tests run as: Debian's nobody.
const unprivilegedUID = 65534

// unprivileged reports whether this process may run t's body: it is not
// root. As root, it runs t in a copy of this test binary as
// unprivilegedUID instead (failing t if that copy fails or does not run
// t), and the caller returns.
func unprivileged(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The go command's build directory is root's alone: the copy lives
	// where the user can run it.
	dir, err := os.MkdirTemp("", "mover-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "mover.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+os.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: unprivilegedUID, Gid: unprivilegedUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", t.Name(), unprivilegedUID, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s as uid %d did not pass:\n%s", t.Name(), unprivilegedUID, out)
	}
	t.Logf("ran as uid %d", unprivilegedUID)
	return false
}
