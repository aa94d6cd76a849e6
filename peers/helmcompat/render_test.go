package helmcompat

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/internal/corpus"

	v3action "helm.sh/helm/v3/pkg/action"
	v3loader "helm.sh/helm/v3/pkg/chart/loader"
	v3chartutil "helm.sh/helm/v3/pkg/chartutil"
	v4action "helm.sh/helm/v4/pkg/action"
	v4common "helm.sh/helm/v4/pkg/chart/common"
	v4loader "helm.sh/helm/v4/pkg/chart/v2/loader"
	v4release "helm.sh/helm/v4/pkg/release/v1"
)

// kubeVersion is the cluster both renders are for.
const kubeVersion = "v1.36.0"

// rendered is what a render produced: the manifest (documents in install
// order, each under its "# Source:" line), the hooks' manifests and the
// notes.
type rendered struct {
	manifest, hooks, notes string
}

func renderV3(dir string, vals map[string]any) (rendered, error) {
	ch, err := v3loader.Load(dir)
	if err != nil {
		return rendered{}, err
	}
	kv, err := v3chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		return rendered{}, err
	}
	in := v3action.NewInstall(&v3action.Configuration{Log: func(string, ...any) {}})
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.ReleaseName, in.Namespace, in.KubeVersion = "compat", "default", kv
	rel, err := in.Run(ch, copyValues(vals))
	if err != nil {
		return rendered{}, err
	}
	var hooks strings.Builder
	for _, h := range rel.Hooks {
		fmt.Fprintf(&hooks, "# %s %v\n%s\n", h.Path, h.Events, h.Manifest)
	}
	return rendered{manifest: rel.Manifest, hooks: hooks.String(), notes: rel.Info.Notes}, nil
}

func renderV4(dir string, vals map[string]any) (rendered, error) {
	ch, err := v4loader.Load(dir)
	if err != nil {
		return rendered{}, err
	}
	kv, err := v4common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return rendered{}, err
	}
	cfg := &v4action.Configuration{}
	cfg.SetLogger(slog.DiscardHandler)
	in := v4action.NewInstall(cfg)
	in.DryRunStrategy, in.Replace = v4action.DryRunClient, true
	in.ReleaseName, in.Namespace, in.KubeVersion = "compat", "default", kv
	r, err := in.Run(ch, copyValues(vals))
	if err != nil {
		return rendered{}, err
	}
	rel, ok := r.(*v4release.Release)
	if !ok {
		return rendered{}, fmt.Errorf("install returned a %T", r)
	}
	var hooks strings.Builder
	for _, h := range rel.Hooks {
		fmt.Fprintf(&hooks, "# %s %v\n%s\n", h.Path, h.Events, h.Manifest)
	}
	return rendered{manifest: rel.Manifest, hooks: hooks.String(), notes: rel.Info.Notes}, nil
}

// copyValues deep-copies values: an install may change the map it is given.
func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		if m, ok := x.(map[string]any); ok {
			x = copyValues(m)
		}
		out[k] = x
	}
	return out
}

// Every chart of the corpus renders the same manifests, hooks and notes
// under Helm 3 and Helm 4, with its default values and with each of its
// ci/ values files: byte-identical, or differing only in the one way
// explained below.
//
// Explained:
//   - white space: Helm 3 trimmed the white space at the end of each
//     document; Helm 4 keeps it (an empty line, or trailing blanks, before
//     the next "---"). The YAML is the same, the objects applied are the
//     same, and the runtime's digests do not include the manifest text, so
//     no release is upgraded for it;
//   - random values: a chart that generates a password or a salted hash
//     renders differently each time, under either Helm; the lines two
//     Helm 3 renders disagree on may differ.
func TestCorpusRendersTheSame(t *testing.T) {
	sets, same, whiteSpace, random, refused := 0, 0, 0, 0, 0
	own, err := filepath.Glob("../../*/testdata/charts/*/Chart.yaml")
	if err != nil || len(own) == 0 {
		t.Fatalf("the repository's test charts: %v", err)
	}
	dirs := corpus.Charts(t)
	for _, f := range own {
		dirs = append(dirs, filepath.Dir(f))
	}
	for _, dir := range dirs {
		cases := append([]corpus.ValueSet{{Name: "default values", Values: map[string]any{}}}, corpus.CIValues(t, dir)...)
		for _, vs := range cases {
			name := dir + "/" + vs.Name
			sets++
			old, err3 := renderV3(dir, vs.Values)
			now, err4 := renderV4(dir, vs.Values)
			if (err3 == nil) != (err4 == nil) {
				t.Errorf("%s: Helm 3 error %v, Helm 4 error %v", name, err3, err4)
				continue
			}
			if err3 != nil {
				// Both refuse the values: alike, but nothing rendered to
				// compare, so counted apart and bounded below.
				refused++
				t.Logf("%s: both refuse the values: Helm 3: %v; Helm 4: %v", name, err3, err4)
				continue
			}
			switch {
			case old.manifest == now.manifest:
			case slices.Equal(trimmed(old.manifest), trimmed(now.manifest)):
				whiteSpace++
			default:
				again, err := renderV3(dir, vs.Values)
				if err != nil {
					t.Fatal(err)
				}
				if d := unexplained(trimmed(old.manifest), trimmed(again.manifest), trimmed(now.manifest)); d != "" {
					t.Errorf("%s: the manifests differ: %s", name, d)
					continue
				}
				random++
			}
			if d := unexplained(trimmed(old.hooks), trimmed(old.hooks), trimmed(now.hooks)); d != "" {
				t.Errorf("%s: the hooks differ: %s", name, d)
				continue
			}
			if old.notes != now.notes {
				t.Errorf("%s: the notes differ", name)
				continue
			}
			same++
		}
	}
	t.Logf("%d of %d chart and values sets render the same under Helm 3 and Helm 4: %d byte-identical, %d but for white space at the end of documents, %d but for random values; %d refused by both",
		same, sets, same-whiteSpace-random, whiteSpace, random, refused)
	if refused*20 > sets {
		t.Errorf("%d of %d values sets refused by both Helms: more than 5%% compared nothing", refused, sets)
	}
	if sets < 21 {
		t.Errorf("only %d values sets rendered: the corpus has 21 charts", sets)
	}
}

// trimmed drops trailing blanks and empty lines: the white space Helm 3
// trimmed at the end of documents.
func trimmed(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimRight(l, " \t"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// unexplained describes the first line where v4 differs from v3 though
// two Helm 3 renders (v3, again) agree on it, or is "".
func unexplained(v3, again, v4 []string) string {
	if len(v3) != len(v4) || len(v3) != len(again) {
		return fmt.Sprintf("Helm 3 renders %d and %d lines, Helm 4 %d", len(v3), len(again), len(v4))
	}
	for i := range v3 {
		if v3[i] != v4[i] && v3[i] == again[i] {
			return fmt.Sprintf("line %d: Helm 3 %q, Helm 4 %q", i+1, v3[i], v4[i])
		}
	}
	return ""
}
