package crdready_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/chartpilot/chartpilot/cluster/clustertest"
	"github.com/chartpilot/chartpilot/internal/crdready"
)

const group = "crdready.chartpilot.dev"

// crd is a namespaced CRD of group with one served version, v1.
func crd(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTo(true),
				}},
			}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// hider is a fault-injecting transport between the waits and a real API
// server: it takes the widgets resource out of one discovery endpoint's
// answers for its first looks, as an API server whose discovery lags does.
type hider struct {
	rt http.RoundTripper
	// path is the endpoint: "/apis" (aggregated discovery) or
	// "/apis/GROUP/v1".
	path string
	// looks is how many answers lose the resource; -1 for all.
	looks int

	mu   sync.Mutex
	seen int
}

func (h *hider) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if err != nil || req.URL.Path != h.path || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	h.mu.Lock()
	h.seen++
	hide := h.looks < 0 || h.seen <= h.looks
	h.mu.Unlock()
	if !hide {
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("hider: %s answered %s, not JSON: cannot hide anything", h.path, mt)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	if h.path == "/apis" { // apidiscovery.k8s.io/v2 APIGroupDiscoveryList
		for _, g := range doc["items"].([]any) {
			g := g.(map[string]any)
			if g["metadata"].(map[string]any)["name"] != group {
				continue
			}
			for _, v := range g["versions"].([]any) {
				v := v.(map[string]any)
				v["resources"] = without(v["resources"], "resource")
			}
		}
	} else { // APIResourceList
		doc["resources"] = without(doc["resources"], "name")
	}
	if body, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// without drops the widgets resource and its subresources from list.
func without(list any, key string) []any {
	var out []any
	for _, r := range list.([]any) {
		if name, _ := r.(map[string]any)[key].(string); name != "widgets" && !strings.HasPrefix(name, "widgets/") {
			out = append(out, r)
		}
	}
	return out
}

// TestCRDReady installs CRDs on a real API server (one for the whole test,
// as starting one costs seconds) and waits for them and looks at them.
func TestCRDReady(t *testing.T) {
	cfg := clustertest.StartAPIServer(t, nil)
	ctx := context.Background()
	ext := apiextensionsclient.NewForConfigOrDie(cfg)
	// widgets is a CRD as users write them; gadgets, created once widgets
	// holds the kind, claims Widget too: a conflict that keeps it from ever
	// being Established.
	create := func(c *apiextensionsv1.CustomResourceDefinition) {
		t.Helper()
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(crd("widgets", "Widget"))
	if err := crdready.Wait(ctx, cfg, []string{"widgets." + group}, crdready.Options{}); err != nil {
		t.Fatal(err)
	}
	create(crd("gadgets", "Widget"))
	t.Run("Wait", func(t *testing.T) { testWait(t, cfg) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, cfg) })
	t.Run("Observe", func(t *testing.T) { testObserve(t, cfg) })
}

// testWait waits for CRDs and for kinds, with and without discovery
// lagging, and when they never come: each failure names the CRD or kind
// and what was last seen of it.
func testWait(t *testing.T, cfg *rest.Config) {
	ctx := context.Background()
	widget := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"}
	const timeout = time.Second

	tests := []struct {
		name string
		// crds, when set, are waited for with Wait; else kinds with WaitKinds.
		crds  []string
		kinds []schema.GroupVersionKind
		// hide, when set, takes widgets out of an endpoint's answers.
		hide *hider
		// wantErr is the whole message; empty when the wait succeeds.
		wantErr string
	}{
		{name: "served", crds: []string{"widgets." + group}},
		{name: "served kind", kinds: []schema.GroupVersionKind{widget}},
		{
			name: "aggregated discovery lags", crds: []string{"widgets." + group},
			hide: &hider{path: "/apis", looks: 3},
		},
		{
			name: "group-version discovery lags", crds: []string{"widgets." + group},
			hide: &hider{path: "/apis/" + group + "/v1", looks: 3},
		},
		{
			name: "kind: aggregated discovery lags", kinds: []schema.GroupVersionKind{widget},
			hide: &hider{path: "/apis", looks: 3},
		},
		{
			name: "no CRD", crds: []string{"widgets." + group, "nothings." + group},
			wantErr: "CRD nothings." + group + " not served after 1s: last seen: not found",
		},
		{
			name: "name conflict", crds: []string{"gadgets." + group},
			wantErr: "CRD gadgets." + group + " not served after 1s: last seen: not Established: NamesAccepted False (ListKindConflict): \"WidgetList\" is already in use",
		},
		{
			name: "aggregated discovery never lists it", crds: []string{"widgets." + group},
			hide:    &hider{path: "/apis", looks: -1},
			wantErr: "CRD widgets." + group + " not served after 1s: last seen: Established, but aggregated discovery (/apis) lists no widgets (Widget) in " + group + "/v1",
		},
		{
			name: "group-version discovery never lists it", crds: []string{"widgets." + group},
			hide:    &hider{path: "/apis/" + group + "/v1", looks: -1},
			wantErr: "CRD widgets." + group + " not served after 1s: last seen: Established, but /apis/" + group + "/v1 lists no widgets (Widget)",
		},
		{
			name: "each CRD left is named", crds: []string{"nothings." + group, "gadgets." + group},
			wantErr: "CRD nothings." + group + " not served after 1s: last seen: not found\n" +
				"CRD gadgets." + group + " not served after 1s: last seen: not Established: NamesAccepted False (ListKindConflict): \"WidgetList\" is already in use",
		},
		{
			name: "kind of no group", kinds: []schema.GroupVersionKind{{Group: "nowhere.chartpilot.dev", Version: "v1", Kind: "Widget"}},
			wantErr: "kind Widget.nowhere.chartpilot.dev/v1 not served after 1s (is its CRD installed and Established?): last seen: discovery (/api, /apis) does not list group-version nowhere.chartpilot.dev/v1",
		},
		{
			name: "kind not in its group", kinds: []schema.GroupVersionKind{widget, {Group: group, Version: "v1", Kind: "Gizmo"}},
			wantErr: "kind Gizmo." + group + "/v1 not served after 1s (is its CRD installed and Established?): last seen: aggregated discovery (/apis) lists no Gizmo in " + group + "/v1",
		},
		{
			name: "kind hidden from its group-version", kinds: []schema.GroupVersionKind{widget},
			hide:    &hider{path: "/apis/" + group + "/v1", looks: -1},
			wantErr: "kind Widget." + group + "/v1 not served after 1s (is its CRD installed and Established?): last seen: /apis/" + group + "/v1 lists no Widget",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rest.CopyConfig(cfg)
			if tt.hide != nil {
				cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tt.hide.rt = rt; return tt.hide })
			}
			opts := crdready.Options{Timeout: timeout}
			if tt.wantErr == "" {
				opts.Timeout = time.Minute
			}
			var err error
			if tt.crds != nil {
				err = crdready.Wait(ctx, cfg, tt.crds, opts)
			} else {
				err = crdready.WaitKinds(ctx, cfg, tt.kinds, opts)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("wait: %v", err)
				}
				if tt.hide != nil && tt.hide.seen <= tt.hide.looks {
					t.Errorf("%s was looked at %d times, want more than the %d answers hiding the kind", tt.hide.path, tt.hide.seen, tt.hide.looks)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error:\n%v\nwant:\n%s", err, tt.wantErr)
			}
			if !errors.Is(err, crdready.ErrNotServed) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v is not ErrNotServed and context.DeadlineExceeded", err)
			}
		})
	}
}

// testCancelled: a wait the caller cancels says so, with what it saw until then.
func testCancelled(t *testing.T, cfg *rest.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := crdready.Wait(ctx, cfg, []string{"nothings." + group}, crdready.Options{Timeout: time.Minute})
	var nse *crdready.NotServedError
	if !errors.As(err, &nse) || nse.LastSeen != "not found" || nse.After >= time.Minute {
		t.Fatalf("error %v (%#v), want a NotServedError that saw nothing, before the timeout", err, nse)
	}
	if !strings.HasSuffix(err.Error(), "last seen: not found (context deadline exceeded)") {
		t.Errorf("error %q does not end with the context's error", err)
	}
}

// testObserve: Observe looks once, for checks that report rather than wait.
func testObserve(t *testing.T, cfg *rest.Config) {
	ctx := context.Background()
	tests := []struct {
		name, crd string
		// hide, when set, takes widgets out of an endpoint's answers.
		hide      *hider
		wantReady bool
		want      string
	}{
		{name: "served", crd: "widgets." + group, wantReady: true, want: "Established and served by discovery"},
		{name: "absent", crd: "nothings." + group, want: "not found"},
		{
			name: "discovery lags", crd: "widgets." + group, hide: &hider{path: "/apis/" + group + "/v1", looks: -1},
			want: "Established, but /apis/" + group + "/v1 lists no widgets (Widget)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rest.CopyConfig(cfg)
			if tt.hide != nil {
				cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { tt.hide.rt = rt; return tt.hide })
			}
			s, err := crdready.Observe(ctx, cfg, tt.crd)
			if err != nil {
				t.Fatal(err)
			}
			if s.Ready() != tt.wantReady || s.String() != tt.want {
				t.Errorf("Observe(%s) = ready %v, %q; want %v, %q", tt.crd, s.Ready(), s, tt.wantReady, tt.want)
			}
		})
	}
}
