package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chartpilot/chartpilot/catalog/edit"
	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/catalog/httpapi/httpapitest"
	"github.com/chartpilot/chartpilot/internal/peerbuild"
)

// peerModule holds the peer that serves a catalog with catalogd v1.2.0's
// own storage and handler code (see its main.go).
var peerModule = filepath.Join("..", "..", "peers", "catalogd")

var (
	peerOnce sync.Once
	peerPath string
	peerErr  error
)

// catalogdStorage returns the peer built once into the user's cache,
// keyed by its sources and the Go version; CHARTPILOT_CATALOGD_STORAGE
// names a prebuilt one.
func catalogdStorage(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHARTPILOT_CATALOGD_STORAGE"); p != "" {
		return p
	}
	peerOnce.Do(func() {
		peerPath, peerErr = peerbuild.Build(context.Background(), peerbuild.Options{
			Name: "catalogd-storage", Module: peerModule, Keys: []string{"go.mod", "go.sum", "main.go"}})
	})
	if peerErr != nil {
		t.Fatalf("building the catalogd peer: %v", peerErr)
	}
	return peerPath
}

// startCatalogd serves dir as name with catalogd's code until the test
// ends and returns its root URL.
func startCatalogd(t *testing.T, dir, name string, metas bool) string {
	t.Helper()
	cmd := exec.Command(catalogdStorage(t), "--dir", dir, "--name", name, "--address", "127.0.0.1:0", fmt.Sprintf("--metas=%t", metas))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		base, ok := strings.CutPrefix(strings.TrimSpace(line), "serving ")
		if !ok {
			t.Fatalf("the catalogd peer said %q; its log:\n%s", line, stderr.String())
		}
		return strings.TrimSuffix(base, "/catalogs/"+name)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the catalogd peer did not start; its log:\n%s", stderr.String())
	}
	return ""
}

// inlineCatalog is a catalog chartpilot writes: the webapp bundle of the
// bundle package's goldens published inline (every manifest in an
// olm.bundle.object), then deprecated.
func inlineCatalog(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "catalog")
	if _, err := edit.Add(t.Context(), edit.AddOptions{Dir: dir, BundleDir: filepath.Join("..", "..", "bundle", "testdata", "golden", "webapp", "bundle"), InitPackage: true}); err != nil {
		t.Fatal(err)
	}
	if err := edit.Deprecate(t.Context(), edit.DeprecateOptions{Dir: dir, Package: "webapp-operator", Message: "a test"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCatalogdAgrees is the differential test without a cluster: for each
// catalog, chartpilot's server and catalogd's own serving code answer
// every standard query alike, byte for byte.
func TestCatalogdAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("builds catalogd's serving code from its module: minutes on a cold machine")
	}
	large := t.TempDir()
	httpapi.WriteLargeCatalog(t, large, 30, 10)
	for _, tc := range []struct {
		name  string
		dir   string
		metas bool
	}{
		{name: "test catalog", dir: "testdata/catalog", metas: true},
		{name: "test catalog without metas", dir: "testdata/catalog"},
		{name: "inline bundles", dir: inlineCatalog(t), metas: true},
		{name: "30 packages of 10 bundles", dir: large, metas: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			theirs := startCatalogd(t, tc.dir, "cat", tc.metas)
			c, err := httpapi.Load(t.Context(), os.DirFS(tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			ours := httptest.NewServer(httpapi.NewHandler(httpapi.HandlerOptions{Catalogs: map[string]*httpapi.Content{"cat": c}, DisableMetas: !tc.metas}))
			defer ours.Close()
			queries, err := httpapitest.StandardQueries(c.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			httpapitest.Compare(t, httpapitest.Endpoint{URL: ours.URL}, httpapitest.Endpoint{URL: theirs}, "cat", queries)
		})
	}
}
