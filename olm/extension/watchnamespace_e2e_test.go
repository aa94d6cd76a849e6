package extension_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/olmtest"
)

// The bundle's install modes decide which namespaces its operator watches,
// through the ClusterExtension's config.inline.watchNamespace: an
// OwnNamespace-only bundle watches its own namespace unless told, a
// SingleNamespace one the namespace given, and one with neither mode the
// user asked for is refused before anything is created.
func TestWatchNamespace(t *testing.T) {
	c := newClient(t)
	reg := olmtest.Registry(t)
	own := olmtest.Bundle{Package: "v1own", Version: "0.1.0", InstallModes: []string{"OwnNamespace"}}
	single := olmtest.Bundle{Package: "v1single", Version: "0.1.0", InstallModes: []string{"SingleNamespace"}}
	catalog := func(b olmtest.Bundle) string {
		dir, ref := olmtest.PushBundle(t, reg, b, nil)
		return olmtest.PushCatalog(t, reg+"/"+b.Package+"-catalog:1", false, olmtest.ImageBundle{Dir: dir, Ref: ref})
	}
	ownCatalog, singleCatalog := catalog(own), catalog(single)
	suffix := fmt.Sprintf("-%d", time.Now().UnixNano()%100000)

	// Refused up front: SingleNamespace without a namespace to watch, and
	// a namespace other than its own for an OwnNamespace-only bundle.
	for _, opts := range []extension.InstallOptions{
		{Package: single.Package, Namespace: single.Package + suffix, CatalogImage: singleCatalog},
		{Package: own.Package, Namespace: own.Package + suffix, CatalogImage: ownCatalog, WatchNamespace: "elsewhere"},
	} {
		if _, err := extension.Install(t.Context(), c, opts); !errors.Is(err, extension.ErrInstallMode) {
			t.Errorf("install %s watching %q: %v, want ErrInstallMode", opts.Package, opts.WatchNamespace, err)
		}
		if ext, err := extension.Observe(t.Context(), c, opts.Package); err != nil || ext.Extension != nil {
			t.Errorf("a refused install of %s created its ClusterExtension (err %v)", opts.Package, err)
		}
	}

	tests := []struct {
		bundle    olmtest.Bundle
		opts      extension.InstallOptions
		watch     string
		wantNotes []string
	}{
		{bundle: own, opts: extension.InstallOptions{Package: own.Package, Namespace: own.Package + suffix, CatalogImage: ownCatalog},
			watch: own.Package + suffix, wantNotes: []string{extension.NoInstallerNote, extension.WatchNamespaceNote}},
		{bundle: single, opts: extension.InstallOptions{Package: single.Package, Namespace: single.Package + suffix, CatalogImage: singleCatalog, WatchNamespace: "default"},
			watch: "default", wantNotes: []string{extension.NoInstallerNote}},
	}
	for _, tt := range tests {
		t.Run(tt.bundle.Package, func(t *testing.T) {
			ctx := t.Context()
			res, err := extension.Install(ctx, c, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { uninstallQuietly(c, tt.opts.Package) })
			if !slices.Equal(res.Notes, tt.wantNotes) {
				t.Errorf("notes %q, want %q", res.Notes, tt.wantNotes)
			}
			r, err := extension.Wait(ctx, c, tt.opts.Package, extension.WaitOptions{Timeout: 3 * time.Minute})
			if err != nil {
				t.Fatalf("%v\n%s", err, reportText(r))
			}
			o, err := extension.Observe(ctx, c, tt.opts.Package)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Extension.Spec.WatchNamespace(); got != tt.watch {
				t.Errorf("spec.config.inline.watchNamespace = %q, want %q", got, tt.watch)
			}
			// OLM v1 tells the operator which namespace to watch as OLM v0
			// does: the olm.targetNamespaces annotation of its pods.
			var dep appsv1.Deployment
			if err := c.Get(ctx, client.ObjectKey{Namespace: tt.opts.Namespace, Name: tt.bundle.Deployment()}, &dep); err != nil {
				t.Fatal(err)
			}
			if got := dep.Spec.Template.Annotations["olm.targetNamespaces"]; got != tt.watch {
				t.Errorf("the operator's pods watch %q, want %q", got, tt.watch)
			}
		})
	}
}
