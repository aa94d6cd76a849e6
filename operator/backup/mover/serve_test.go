package mover

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startServer serves the archive of a tree of one file, marker, with
// token and returns its URL and the channel of ServeOnce's outcome.
func startServer(t *testing.T, token string, timeout time.Duration, marker string) (url string, archiveSize int64, done chan error) {
	t.Helper()
	archive, size := writeArchive(t, marker)
	url, done = serveArchive(t, archive, size, token, timeout)
	return url, size, done
}

// writeArchive archives a folder holding one file, marker, and returns the
// archive's path and size.
func writeArchive(t *testing.T, marker string) (archive string, size int64) {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "marker"), []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	archive = filepath.Join(t.TempDir(), "v.tar.gz")
	res, err := ArchiveFile(src, archive)
	if err != nil {
		t.Fatal(err)
	}
	return archive, res.Size
}

// serveArchive serves archive (of size bytes) once with ServeOnce on a free
// port of loopback; done receives ServeOnce's error.
func serveArchive(t *testing.T, archive string, size int64, token string, timeout time.Duration) (url string, done chan error) {
	t.Helper()
	addr := make(chan net.Addr, 1)
	done = make(chan error, 1)
	go func() {
		got, err := ServeOnce(t.Context(), ServeOptions{File: archive, Addr: "127.0.0.1:0", Token: token, Timeout: timeout,
			listening: func(a net.Addr) { addr <- a }})
		if err == nil && got.Size != size {
			err = errors.New("ServeOnce reports a size other than the archive's")
		}
		done <- err
	}()
	select {
	case a := <-addr:
		return "http://" + a.String() + "/", done
	case err := <-done:
		t.Fatal(err)
	}
	return "", nil
}

// The archive goes to the fetcher with the token, after requests without
// it were refused; the server then ends, and a second fetch finds nobody.
func TestServeOnceAndFetch(t *testing.T) {
	url, size, done := startServer(t, "t0ken", time.Minute, strings.Repeat("m", 100_000))
	for _, bad := range []string{"", "wrong"} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bad != "" {
			req.Header.Set("Authorization", "Bearer "+bad)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("token %q: %s, want 403", bad, resp.Status)
		}
	}
	if _, err := ExtractHTTP(t.Context(), url, "wrong", t.TempDir()); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a fetch with a wrong token: %v, want 403", err)
	}
	dst := t.TempDir()
	res, err := ExtractHTTP(t.Context(), url, "t0ken", dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != size || res.Files != 1 {
		t.Errorf("fetched %+v, want %d bytes and 1 file", res, size)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "marker")); err != nil || len(got) != 100_000 {
		t.Errorf("extracted marker: %d bytes, %v", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatalf("ServeOnce: %v", err)
	}
	fetchWait = 0
	t.Cleanup(func() { fetchWait = time.Minute })
	if _, err := ExtractHTTP(t.Context(), url, "t0ken", t.TempDir()); err == nil {
		t.Error("the archive was served twice")
	}
}

// A server nobody fetches from ends at its timeout with ErrNotFetched.
func TestServeOnceTimesOut(t *testing.T) {
	_, _, done := startServer(t, "t0ken", 200*time.Millisecond, "m")
	if err := <-done; !errors.Is(err, ErrNotFetched) {
		t.Errorf("ServeOnce: %v, want ErrNotFetched", err)
	}
}

// A fetcher started before its server waits for it to listen.
func TestFetchWaitsForTheServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("late"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "v.tar.gz")
	if _, err := ArchiveFile(src, archive); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(time.Second)
		_, _ = ServeOnce(context.Background(), ServeOptions{File: archive, Addr: addr, Token: "t", Timeout: 10 * time.Second})
	}()
	dst := t.TempDir()
	if _, err := ExtractHTTP(t.Context(), "http://"+addr+"/", "t", dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "f")); string(got) != "late" {
		t.Errorf("fetched %q", got)
	}
}

// ServeOnce returns only once its response has left: a small archive
// (which the response's buffer holds whole) reaches the fetcher every
// time rather than being cut off by the server's own close.
func TestServeOnceSendsTheWholeArchive(t *testing.T) {
	archive, size := writeArchive(t, "small")
	for i := range 300 {
		url, done := serveArchive(t, archive, size, "t0ken", 10*time.Second)
		res, err := ExtractHTTP(t.Context(), url, "t0ken", t.TempDir())
		if err != nil || res.Size != size {
			t.Fatalf("fetch %d: %+v, %v; want %d bytes", i, res, err, size)
		}
		if err := <-done; err != nil {
			t.Fatalf("serve %d: %v", i, err)
		}
	}
}
