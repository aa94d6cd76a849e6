package scorecard

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/chartpilot/chartpilot/internal/scorecardtests"
)

// imageOf makes a one-layer image of the files under dir.
func imageOf(t *testing.T, dir string) v1.Image {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// A bundle image on a real registry: pulled, unpacked, tested like a
// directory.
func TestPullBundle(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(repo, dir string) string {
		ref, err := name.ParseReference(host + "/" + repo + ":v0.1.0")
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, imageOf(t, dir)); err != nil {
			t.Fatal(err)
		}
		return ref.String()
	}
	bundleRef := push("validated-operator-bundle", newFixture(t, "0.1.0").write(t, t.TempDir()))
	notBundle := t.TempDir()
	writeFile(t, filepath.Join(notBundle, "etc", "motd"), []byte("hello\n"))
	otherRef := push("not-a-bundle", notBundle)

	dir := filepath.Join(t.TempDir(), "bundle")
	if err := PullBundle(context.Background(), bundleRef, dir); err != nil {
		t.Fatal(err)
	}
	res := runOne(t, dir, scorecardtests.OLMBundleValidation)
	if res.State != "pass" {
		t.Errorf("pulled bundle: %s %q", res.State, res.Errors)
	}

	// LocalBundle pulls an image into a directory its cleanup removes, and
	// takes a directory as it is.
	local, cleanup, err := LocalBundle(t.Context(), bundleRef)
	if err != nil {
		t.Fatal(err)
	}
	if res := runOne(t, local, scorecardtests.OLMBundleValidation); res.State != "pass" {
		t.Errorf("LocalBundle of an image: %s %q", res.State, res.Errors)
	}
	cleanup()
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s", local)
	}
	if got, cleanup, err := LocalBundle(t.Context(), dir); err != nil || got != dir {
		t.Errorf("LocalBundle of a directory = %s, %v; want %s", got, err, dir)
	} else {
		cleanup()
	}
	if _, _, err := LocalBundle(t.Context(), otherRef); err == nil || !strings.Contains(err.Error(), "not a registry+v1 bundle image") {
		t.Errorf("LocalBundle of an image that is no bundle: %v", err)
	}

	dir = filepath.Join(t.TempDir(), "bundle")
	err = PullBundle(context.Background(), otherRef, dir)
	if err == nil || !strings.Contains(err.Error(), "not a registry+v1 bundle image: no /metadata/annotations.yaml") {
		t.Errorf("error %v, want not a bundle image", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed pull left %s behind", dir)
	}
}

func TestLoadBundleErrors(t *testing.T) {
	if _, err := LoadBundle(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "reading bundle") {
		t.Errorf("missing dir: %v", err)
	}
	empty := t.TempDir()
	b, err := LoadBundle(empty)
	if err != nil {
		t.Fatal(err)
	}
	if b.LoadErr == nil || !strings.Contains(b.LoadErr.Error(), "unable to find a csv") {
		t.Errorf("LoadErr %v, want no CSV", b.LoadErr)
	}
	// Every test that needs the manifests says why they are missing.
	res := runOne(t, empty, scorecardtests.OLMBundleValidation)
	if res.State != "fail" || !strings.Contains(strings.Join(res.Errors, "\n"), "metadata/annotations.yaml: missing") {
		t.Errorf("olm-bundle-validation on an empty dir: %s %q", res.State, res.Errors)
	}
	res = runOne(t, empty, scorecardtests.OLMSpecDescriptors)
	if res.State != "error" || !strings.Contains(strings.Join(res.Errors, "\n"), "unable to find a csv") {
		t.Errorf("olm-spec-descriptors on an empty dir: %s %q", res.State, res.Errors)
	}
}
