package realnode

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/chartpilot/chartpilot/catalog/oci"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/internal/ociimage"
	"github.com/chartpilot/chartpilot/olm"
)

// A catalog image that serves nothing, as others build one with opm
// (catalog-build refuses a catalog without packages), pushed to the
// cluster's registry and subscribed to. OLM serves it as a READY pod; only
// asking the registry itself shows that the catalog is empty, and the
// diagnosis says so, naming the CatalogSource and the image.
func TestCatalogImageServingNothing(t *testing.T) {
	c := node.Get(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()

	ref := c.RegistryAddr() + "/empty-catalog:v0.1.0"
	if _, err := ociimage.Push(ctx, emptyCatalogImage(t, c.Image(images.OPM)), ref); err != nil {
		t.Fatal(err)
	}

	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := olm.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "empty-catalog"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := olm.SubscribeOptions{Package: "hello", Namespace: ns, CatalogImage: ref}
	res, err := olm.Subscribe(ctx, cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("subscribed: %v", res)

	var last olm.Finding
	var report *olm.Report
	subscribed := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		o, err := olm.Observe(ctx, cl, opts.Package, ns)
		if err != nil {
			return false, err
		}
		olm.ObserveCatalog(ctx, cfg, o)
		report = o.Report()
		for _, f := range report.Findings {
			if f.Check == olm.CheckCatalogSource {
				last = f
			}
		}
		// Until its pod is ready, OLM cannot reach the registry: a failure
		// of its own, which passes.
		return strings.Contains(last.Message, "serves no packages"), nil
	})
	if err != nil {
		var text bytes.Buffer
		if report != nil {
			_ = report.WriteText(&text)
		}
		t.Fatalf("the CatalogSource check did not name the empty catalog: %v; last: %+v\n%s", err, last, text.String())
	}
	t.Logf("named %s after the Subscription: %s (%s)", time.Since(subscribed).Round(time.Second), last.Message, last.Fix)
	for _, want := range []string{"READY, but the catalog of CatalogSource " + ns + "/", "(image " + ref + ") serves no packages"} {
		if !strings.Contains(last.Message, want) {
			t.Errorf("message %q does not say %q", last.Message, want)
		}
	}
	if !strings.HasPrefix(last.Object, "catalogsource/") || !strings.Contains(last.Fix, "make catalog-build catalog-push") {
		t.Errorf("finding %+v does not name the CatalogSource or the fix", last)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("olm status:\n%s", text.String())
}

// emptyCatalogImage is what a `docker build` FROM the opm image makes of a
// catalog directory with no package: an empty /configs with the label that
// names it, and opm serving it (its cache built at start, in a /tmp that
// the image's user can write).
func emptyCatalogImage(t *testing.T, opm string) v1.Image {
	t.Helper()
	base, err := ociimage.Pull(t.Context(), opm)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ociimage.Tar([]ociimage.Entry{
		{Name: strings.TrimPrefix(oci.ImageConfigsDir, "/"), Dir: true},
		{Name: "tmp", Dir: true, Mode: 0o1777},
	})
	if err != nil {
		t.Fatal(err)
	}
	mt, err := base.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	layerType := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		layerType = types.DockerLayer
	}
	layer, err := ociimage.Layer(data, layerType)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels[oci.ConfigsLabel] = oci.ImageConfigsDir
	cf.Config.Entrypoint = []string{"/bin/opm"}
	// No pre-built cache (catalog.Dockerfile's `opm serve --cache-only`
	// step): opm builds one in a temporary directory as it starts.
	cf.Config.Cmd = []string{"serve", oci.ImageConfigsDir}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}
