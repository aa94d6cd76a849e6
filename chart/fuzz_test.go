package chart

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/internal/gunzip/gunziptest"
	"github.com/chartpilot/chartpilot/internal/ociimage"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
)

// fuzzChartLimit is the decompressed size each archive may have while
// fuzzing: small, so that a bomb the fuzzer makes shows past it.
const fuzzChartLimit = 64 << 10

// rawTar archives name: data pairs as they are (names may climb out).
func rawTar(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f[1]))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzLoadArchive loads arbitrary packaged charts (tar bytes gzipped
// here, or raw bytes as the .tgz) as init and the runtime do: it never
// panics, an error names the archive, and a chart loaded holds no archive
// (its own or a packaged subchart's) larger decompressed than the limit.
func FuzzLoadArchive(f *testing.F) {
	webapp, err := ociimage.TarDir(os.DirFS(testChart("webapp")), "webapp")
	if err != nil {
		f.Fatal(err)
	}
	chartYAML := [2]string{"app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n"}
	sub := gunziptest.Gzip(f, rawTar(f, [2]string{"sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.0\n"}, [2]string{"sub/values.yaml", strings.Repeat("a: b\n", fuzzChartLimit/4)}))
	for _, seed := range [][]byte{
		webapp,
		rawTar(f, chartYAML, [2]string{"app/templates/cm.yaml", "kind: ConfigMap"}),
		rawTar(f, chartYAML, [2]string{"app/../../evil", "x"}),
		rawTar(f, chartYAML, [2]string{"/etc/evil", "x"}),
		rawTar(f, chartYAML, [2]string{"app/values.yaml", strings.Repeat("a", 2*fuzzChartLimit)}),
		rawTar(f, chartYAML, [2]string{"app/charts/sub-0.1.0.tgz", string(sub)}),
		rawTar(f, [2]string{"app/Chart.yaml", "apiVersion: v2\nname: app\nversion: {{ .Version }}\n"}),
		rawTar(f, [2]string{"app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\ntype: library\n"}),
	} {
		f.Add(seed, false)
	}
	f.Add([]byte("not gzip"), true)
	f.Add(gunziptest.Gzip(f, webapp)[:64], true) // truncated
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		old := archive.MaxDecompressedChartSize
		archive.MaxDecompressedChartSize = fuzzChartLimit
		defer func() { archive.MaxDecompressedChartSize = old }()
		if !compressed {
			data = gunziptest.Gzip(t, data)
		}
		path := filepath.Join(t.TempDir(), "fuzz.tgz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the archive %s", err, path)
			}
			return
		}
		checkSizes(t, c.Helm)
	})
}

// checkSizes fails the test if ch or a subchart holds more than the limit.
func checkSizes(t *testing.T, ch *helmchart.Chart) {
	t.Helper()
	n := 0
	for _, f := range ch.Raw {
		n += len(f.Data)
	}
	if n > fuzzChartLimit {
		t.Errorf("chart %s holds %d bytes decompressed, past the limit of %d", ch.Name(), n, fuzzChartLimit)
	}
	for _, d := range ch.Dependencies() {
		checkSizes(t, d)
	}
}
