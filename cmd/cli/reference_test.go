package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/clidoc"
)

// The committed command reference is what the command tree gives: a
// command, flag or example changed without `make docs` fails here.
func TestReferenceIsCurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "reference")
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	want := clidoc.Pages(NewRootCommand(streams))
	committed, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range committed {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s documents no command of the tree: run make docs", f)
		}
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		switch {
		case err != nil:
			t.Errorf("%s: %v: run make docs", name, err)
		case !bytes.Equal(got, data):
			t.Errorf("docs/reference/%s is stale: run make docs", name)
		}
	}
}
