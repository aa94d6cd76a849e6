package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// Every command alike, read from the tree itself (a command added later is
// checked without being named here):
//   - its help has an example that runs it (the example names its path);
//   - a command that runs is in the options shape (runcmd.RunE's RunE:
//     complete and validate where there is something to do, then run);
//   - it has the kubeconfig flags exactly when its options hold the
//     kubectl flags (*genericclioptions.ConfigFlags), the only way a
//     command reaches a cluster: no flags that do nothing, and none missing.
func TestCommandTree(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	commands := 0
	walkCommands(NewRootCommand(streams), func(cmd *cobra.Command) {
		commands++
		path := cmd.CommandPath()
		if !strings.Contains(cmd.Example, path) {
			t.Errorf("%s: its help has no example running it (Example naming %q)", path, path)
		}
		kubeFlags := cmd.Flags().Lookup("kubeconfig") != nil || cmd.InheritedFlags().Lookup("kubeconfig") != nil
		if !cmd.Runnable() {
			return // a group: its commands are checked
		}
		o, ok := runcmd.Inspect(cmd)
		if !ok {
			t.Errorf("%s: not in the options shape: its RunE is not runOptions(o) (runcmd.RunE)", path)
			return
		}
		var shown any = o
		if s, ok := o.(shaped); ok {
			shown = s.options
		}
		switch reaches := holdsConfigFlags(reflect.ValueOf(o), map[uintptr]bool{}); {
		case kubeFlags && !reaches:
			t.Errorf("%s: has --kubeconfig, but its options (%T) hold no kubectl flags: it reaches no cluster", path, shown)
		case reaches && !kubeFlags:
			t.Errorf("%s: its options (%T) reach a cluster through the kubectl flags, but it has no --kubeconfig", path, shown)
		}
	})
	if commands < 40 {
		t.Fatalf("walked %d commands: not chartpilot's tree", commands)
	}
}

// walkCommands calls fn on cmd and every command below it.
func walkCommands(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walkCommands(c, fn)
	}
}

var configFlagsType = reflect.TypeFor[*genericclioptions.ConfigFlags]()

// holdsConfigFlags says whether v holds, in its own or chartpilot's types
// (structs, pointers, interfaces), a non-nil *genericclioptions.ConfigFlags.
func holdsConfigFlags(v reflect.Value, seen map[uintptr]bool) bool {
	switch v.Kind() {
	case reflect.Interface:
		return !v.IsNil() && holdsConfigFlags(v.Elem(), seen)
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		if v.Type() == configFlagsType {
			return true
		}
		if seen[v.Pointer()] {
			return false
		}
		seen[v.Pointer()] = true
		return holdsConfigFlags(v.Elem(), seen)
	case reflect.Struct:
		if !strings.HasPrefix(v.Type().PkgPath(), "github.com/chartpilot/chartpilot/") {
			return false
		}
		for i := range v.NumField() {
			if holdsConfigFlags(v.Field(i), seen) {
				return true
			}
		}
	}
	return false
}
