package chart

import (
	"log/slog"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/internal/corpus"

	"helm.sh/helm/v4/pkg/action"
	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

// helmTemplate renders with Helm's install action in client-only dry-run
// mode, as `helm template` does: the reference Render must match.
func helmTemplate(t *testing.T, c *Chart, opts RenderOptions) (*Rendered, error) {
	t.Helper()
	opts = opts.withDefaults()
	ch, err := c.reload()
	if err != nil {
		t.Fatal(err)
	}
	kv, err := helmcommon.ParseKubeVersion(opts.KubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &action.Configuration{}
	cfg.SetLogger(slog.DiscardHandler)
	install := action.NewInstall(cfg)
	install.DryRunStrategy, install.Replace = action.DryRunClient, true
	install.ReleaseName, install.Namespace, install.KubeVersion = opts.ReleaseName, opts.Namespace, kv
	install.APIVersions = opts.APIVersions
	r, err := install.Run(ch, copyValues(opts.Values))
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*helmrelease.Release)
	if !ok {
		t.Fatalf("install returned a %T", r)
	}
	out := &Rendered{Notes: rel.Info.Notes}
	// rel.Manifest holds the documents in install order, each under a
	// "# Source:" comment.
	docs := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	for _, k := range keys {
		source, body, _ := strings.Cut(docs[k], "\n")
		objs, err := parseObjects(source, body)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, Manifest{Source: strings.TrimPrefix(source, "# Source: "), Object: o})
		}
	}
	for _, h := range rel.Hooks {
		objs, err := parseObjects(h.Path, h.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		var events []string
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		for _, o := range objs {
			out.Objects = append(out.Objects, Manifest{Source: h.Path, Hook: strings.Join(events, ","), Object: o})
		}
	}
	return out, nil
}

// TestRenderMatchesHelm renders the test charts and the corpus (defaults and
// every ci/ values file) with Render and with Helm's install action: the
// objects, their order, hooks and notes must be the same.
func TestRenderMatchesHelm(t *testing.T) {
	dirs := []string{testChart("webapp"), testChart("umbrella"), testChart("clusterwide"), testChart("legacy"), testChart("widgets")}
	if !testing.Short() {
		dirs = append(dirs, corpus.Charts(t)...)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.Renderer()
			if err != nil {
				t.Fatal(err)
			}
			sets := map[string]map[string]any{"defaults": nil}
			if !strings.HasPrefix(dir, "testdata") {
				for _, set := range corpus.CIValues(t, dir) {
					sets[set.Name] = set.Values
				}
			}
			for name, vals := range sets {
				opts := RenderOptions{Values: vals}
				want, wantErr := helmTemplate(t, c, opts)
				got, err := r.Render(opts)
				if (err != nil) != (wantErr != nil) {
					t.Errorf("%s: Render() error = %v, Helm's = %v", name, err, wantErr)
					continue
				}
				if err != nil {
					continue
				}
				if !reflect.DeepEqual(manifestList(got), manifestList(want)) {
					t.Errorf("%s: objects differ:\n got %q\nwant %q", name, manifestList(got), manifestList(want))
				}
				for i := range min(len(got.Objects), len(want.Objects)) {
					if !reflect.DeepEqual(withoutRandom(got.Objects[i]), withoutRandom(want.Objects[i])) {
						t.Errorf("%s: object %d (%s) differs", name, i, got.Objects[i].Source)
					}
				}
				if got.Notes != want.Notes {
					t.Errorf("%s: notes differ:\n got %q\nwant %q", name, got.Notes, want.Notes)
				}
			}
		})
	}
}

// manifestList lists "source [hook] apiVersion/kind namespace/name" per object.
func manifestList(r *Rendered) []string {
	var out []string
	for _, m := range r.Objects {
		out = append(out, m.Source+" ["+m.Hook+"] "+m.Object.GetAPIVersion()+"/"+m.Object.GetKind()+" "+m.Object.GetNamespace()+"/"+m.Object.GetName())
	}
	return out
}

// withoutRandom is a rendered object without what charts generate at random
// on each render (passwords, keys, certificates) or derive from it (the
// checksum annotations of pod templates).
func withoutRandom(m Manifest) map[string]any {
	o := m.Object.DeepCopy()
	if o.GetKind() == "Secret" {
		delete(o.Object, "data")
		delete(o.Object, "stringData")
	}
	stripChecksums(o.Object)
	return o.Object
}

func stripChecksums(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if strings.HasPrefix(k, "checksum/") {
				delete(t, k)
				continue
			}
			stripChecksums(val)
		}
	case []any:
		for _, e := range t {
			stripChecksums(e)
		}
	}
}
