package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := NewRootCommand(streams)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String() + errOut.String(), err
}

func TestCommands(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		// wantErr is a substring of the error; empty means success
		wantErr string
		// wantOut is a substring of the output
		wantOut string
	}{
		{name: "version", args: []string{"version"}, wantOut: "kube-apiserver"},
		{name: "version rejects a bad output format", args: []string{"version", "-o", "xml"}, wantErr: "must be one of text, json, yaml"},
		{name: "completion", args: []string{"completion", "bash"}, wantOut: "bash completion"},
		{name: "down with nothing running", args: []string{"cluster", "down", "--state-dir", empty}, wantErr: "no local cluster is running in " + empty},
		{name: "down --ignore-not-running", args: []string{"cluster", "down", "--state-dir", empty, "--ignore-not-running"}, wantOut: "no local cluster is running"},
		{name: "status with nothing running", args: []string{"cluster", "status", "--state-dir", empty}, wantErr: "no local cluster is running"},
		{name: "kubeconfig with nothing running", args: []string{"cluster", "kubeconfig", "--state-dir", empty}, wantErr: "run `chartpilot cluster up`"},
		{name: "up rejects arguments", args: []string{"cluster", "up", "extra"}, wantErr: "unknown command"},
		{name: "no kubectl flags where no cluster is reached", args: []string{"version", "--kubeconfig", "/dev/null"}, wantErr: "unknown flag: --kubeconfig"},
		{name: "kubectl flags where a cluster is reached", args: []string{"olm", "status", "demo", "--kubeconfig", os.DevNull, "--context", "x", "-n", "ns"}, wantErr: "--kubeconfig " + os.DevNull + ": no context in it"},
		{name: "klog's -v on every command", args: []string{"version", "--help"}, wantOut: "-v, --v int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("output lacks %q:\n%s", tt.wantOut, out)
			}
		})
	}
}

func TestVersionJSON(t *testing.T) {
	out, err := run(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Go      string `json:"go"`
		Cluster []struct{ Name, Version string }
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(out))).Decode(&info); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	versions := map[string]string{}
	for _, m := range info.Cluster {
		versions[m.Name] = m.Version
	}
	for name, prefix := range map[string]string{"kube-apiserver": "v1.36.", "olm": "v0.46.", "kwok": "v0.8.", "etcd": "v3.6."} {
		if !strings.HasPrefix(versions[name], prefix) {
			t.Errorf("%s version %q, want %s*", name, versions[name], prefix)
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := map[string]string{
		"/plain/path":      "/plain/path",
		"/with space/x":    "'/with space/x'",
		"/it's":            `'/it'\''s'`,
		"/dollar$HOME/x":   "'/dollar$HOME/x'",
		"relative/../path": "'relative/../path'",
	}
	for in, want := range tests {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// pflag reads a `quoted` word of a flag's usage as the name of its value
// (`--image REF`): a quoted command in a usage became "--image chartpilot
// image push". Quotes in usages are for upper-case value names only.
func TestFlagUsagesQuoteOnlyValueNames(t *testing.T) {
	valueName := regexp.MustCompile("^[A-Z][A-Z0-9_=]*$")
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(f *pflag.Flag) {
			if !strings.Contains(f.Usage, "`") {
				return
			}
			if name, _ := pflag.UnquoteUsage(f); !valueName.MatchString(name) {
				t.Errorf("%s --%s: usage %q names its value %q", cmd.CommandPath(), f.Name, f.Usage, name)
			}
		}
		cmd.LocalFlags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	walk(NewRootCommand(streams))
}
