package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chartpilot/chartpilot/rbac"
	"github.com/chartpilot/chartpilot/scaffold"
)

// An operator granted pods/exec for backup hooks (watches.yaml's
// backupHooks) says so, with why, in its CSV's description, once however
// often the bundle is generated, and `bundle validate` names it.
func TestExtrasNamedInCSVAndValidate(t *testing.T) {
	dir := newProject(t, "webapp", scaffold.Options{})
	watches := filepath.Join(dir, "watches.yaml")
	data, err := os.ReadFile(watches)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(watches, append(data, "  backupHooks: true\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := scaffold.Generate(scaffold.GenerateOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	mustGenerate(t, dir, GenerateOptions{})
	mustGenerate(t, dir, GenerateOptions{})
	desc := readCSV(t, dir).Spec.Description
	if strings.Count(desc, extrasHeading) != 1 || !strings.Contains(desc, "- "+rbac.HooksExtra.String()) || strings.Contains(desc, rbac.SnapshotCopiesExtra.Name) {
		t.Errorf("CSV description names the extras wrong:\n%s", desc)
	}
	rep, err := Validate(ValidateOptions{Dir: filepath.Join(dir, "bundle")})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if want := "extra permission backup-hooks (pods/exec: get, create, in the watched namespaces): runs the commands of the Velero hook annotations"; !strings.Contains(out.String(), want) {
		t.Errorf("bundle validate's output lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), rbac.SnapshotCopiesExtra.Name) {
		t.Errorf("bundle validate names snapshot-copies for a chart without claims:\n%s", out.String())
	}
}

// describeExtras replaces its own section, keeps the author's text, and
// writes none without extras.
func TestDescribeExtras(t *testing.T) {
	const author = "Runs the web app.\n\nSee the docs."
	tests := []struct {
		name, in string
		extras   []rbac.Extra
		want     string
	}{
		{name: "none", in: author, want: author},
		{name: "one", in: author, extras: []rbac.Extra{rbac.HooksExtra},
			want: author + "\n\n" + extrasHeading + "\n\nThe backup API grants the operator these permissions besides what managing its charts' releases takes, each because a chart needs it:\n\n- " + rbac.HooksExtra.String() + "\n"},
		{name: "an old section replaced", in: author + "\n\n" + extrasHeading + "\n\n- stale\n", extras: []rbac.Extra{rbac.SnapshotCopiesExtra},
			want: author + "\n\n" + extrasHeading + "\n\nThe backup API grants the operator these permissions besides what managing its charts' releases takes, each because a chart needs it:\n\n- " + rbac.SnapshotCopiesExtra.String() + "\n"},
		{name: "an old section dropped", in: author + "\n\n" + extrasHeading + "\n\n- stale\n", want: author},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeExtras(tt.in, tt.extras); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
