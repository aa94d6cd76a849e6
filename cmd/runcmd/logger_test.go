package runcmd

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// controller-runtime's global logger, which its own packages and any
// context without a logger log through, is the operator's capped one:
// asking zap for every level (--zap-log-level=10) enables no more there
// than in the operator's own logger. It sets the process's global logger,
// once: no other test of the package may.
func TestSetLoggerCapsTheGlobalLogger(t *testing.T) {
	var zapOpts zap.Options
	fs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zapOpts.BindFlags(fs)
	if err := fs.Parse([]string{"-zap-log-level=10"}); err != nil {
		t.Fatal(err)
	}
	if !zap.New(zap.UseFlagOptions(&zapOpts)).V(10).Enabled() {
		t.Fatal("zap does not enable V(10): the test shows nothing")
	}
	var out bytes.Buffer
	log := setLogger(&zapOpts, &out)
	if log.V(10).Enabled() {
		t.Fatal("the operator's logger is not capped")
	}
	globals := map[string]logr.Logger{
		"ctrl.Log":                 ctrl.Log.WithName("controller-runtime"),
		"a context with no logger": crlog.FromContext(context.Background()),
	}
	for name, global := range globals {
		for level := range 11 {
			if global.V(level).Enabled() != log.V(level).Enabled() {
				t.Errorf("V(%d) of %s enabled: %t, of the operator's logger: %t", level, name, global.V(level).Enabled(), log.V(level).Enabled())
			}
		}
	}
	ctrl.Log.V(10).Info("response body")
	ctrl.Log.V(0).Info("kept")
	if got := out.String(); strings.Contains(got, "response body") || !strings.Contains(got, "kept") {
		t.Errorf("the global logger wrote %q, want the V(0) line only", got)
	}
}
