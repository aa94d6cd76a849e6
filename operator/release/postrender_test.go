package release

import (
	"bytes"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// recorder is a post-renderer that keeps what it was given.
type recorder struct{ seen *strings.Builder }

func (r recorder) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	r.seen.WriteString(in.String())
	return in, nil
}

// The runtime's post-renderers see the release's objects and not its hooks,
// as under Helm 3 (Helm 4 sends hooks too unless told otherwise).
func TestPostRendererSeesNoHooks(t *testing.T) {
	f := newFixture(t)
	ch, err := loader.Load("../testdata/charts/hooked")
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	req := &Request{Name: "hooked", Namespace: f.ns, Chart: ch, Values: map[string]any{"greeting": "hi"},
		PostRenderer: recorder{seen: &seen}, InstallDisableHooks: true}
	if _, err := f.reconcile(req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen.String(), "kind: ConfigMap") {
		t.Fatalf("the post-renderer did not see the release's ConfigMap:\n%s", seen.String())
	}
	if strings.Contains(seen.String(), "kind: Job") {
		t.Errorf("the post-renderer was given the pre-install hook:\n%s", seen.String())
	}
}
