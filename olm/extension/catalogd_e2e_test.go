package extension_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/catalog/httpapi"
	"github.com/chartpilot/chartpilot/catalog/httpapi/httpapitest"
	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// The differential test against the catalogd that runs in the cluster:
// for one catalog image, what catalogd serves for its ClusterCatalog (at
// status.urls.base, over HTTPS with the cluster CA's certificate) and what
// catalog/httpapi answers for the image pulled and loaded locally are the
// same, status, headers and bytes, for /api/v1/all and the metas endpoint
// (catalogd runs with APIV1MetasHandler on), every standard query.
func TestCatalogdServesWhatHTTPAPIServes(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	reg := olmtest.Registry(t)
	var bundles []olmtest.ImageBundle
	for _, b := range []olmtest.Bundle{{Package: "v1served", Version: "0.1.0"}, {Package: "v1served", Version: "0.2.0"}, {Package: "v1served", Version: "0.3.0"}} {
		dir, ref := olmtest.PushBundle(t, reg, b, nil)
		bundles = append(bundles, olmtest.ImageBundle{Dir: dir, Ref: ref})
	}
	image := olmtest.PushCatalog(t, reg+"/v1served-catalog:1", false, bundles...)

	const name = "v1served-catalog"
	cat := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": extension.GroupVersion.String(), "kind": extension.CatalogKind,
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"source": map[string]any{"type": extension.SourceTypeImage, "image": map[string]any{"ref": image}}},
	}}
	if err := c.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, cat) })
	began := time.Now()
	base := waitServing(t, c, name)
	t.Logf("ClusterCatalog %s serving at %s in %s", name, base, time.Since(began).Round(10*time.Millisecond))

	dir := filepath.Join(t.TempDir(), "configs")
	if _, err := oci.PullImage(ctx, image, dir); err != nil {
		t.Fatal(err)
	}
	content, err := httpapi.Load(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	ours := httptest.NewServer(httpapi.NewHandler(httpapi.HandlerOptions{Catalogs: map[string]*httpapi.Content{name: content}}))
	defer ours.Close()

	// catalogd's certificate is signed by the cluster's CA, which the
	// admin's configuration trusts.
	tlsConfig, err := rest.TLSConfigFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	root, ok := strings.CutSuffix(base, httpapi.PathPrefix+name)
	if !ok {
		t.Fatalf("status.urls.base %q does not end in %s%s", base, httpapi.PathPrefix, name)
	}
	theirs := httpapitest.Endpoint{URL: root, Client: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}}
	queries, err := httpapitest.StandardQueries(content.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	httpapitest.Compare(t, httpapitest.Endpoint{URL: ours.URL}, theirs, name, queries)

	// Not two servers that agree on nothing: catalogd serves the whole
	// catalog, and the metas endpoint is on.
	for _, q := range []struct {
		path string
		want func([]byte) bool
	}{
		{"api/v1/all", func(b []byte) bool { return string(b) == string(content.Bytes()) }},
		{"api/v1/metas?schema=olm.bundle", func(b []byte) bool { return strings.Count(string(b), "\n") == 3 }},
	} {
		body, status := get(t, theirs.Client, base+"/"+q.path)
		if status != http.StatusOK || !q.want(body) {
			t.Errorf("catalogd's %s: %d, %d bytes:\n%.300s", q.path, status, len(body), body)
		}
	}
}

func get(t *testing.T, c *http.Client, url string) ([]byte, int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body, resp.StatusCode
}

// waitServing waits until catalogd serves the ClusterCatalog and returns
// its status.urls.base.
func waitServing(t *testing.T, c client.Client, name string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var cat extension.Catalog
	for time.Now().Before(deadline) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(extension.GroupVersion.WithKind(extension.CatalogKind))
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, u); err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cat); err != nil {
			t.Fatal(err)
		}
		if apimeta.IsStatusConditionTrue(cat.Status.Conditions, extension.TypeServing) && cat.Status.URLs != nil && cat.Status.URLs.Base != "" {
			return cat.Status.URLs.Base
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("ClusterCatalog %s not serving after 2m: %+v", name, cat.Status)
	return ""
}
