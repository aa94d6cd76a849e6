package operator

import (
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestCapVerbosity(t *testing.T) {
	var out strings.Builder
	log := CapVerbosity(funcr.New(func(_, args string) { out.WriteString(args + "\n") }, funcr.Options{Verbosity: 10}))
	log.V(maxLogLevel).Info("kept")
	log.V(maxLogLevel + 1).Info("dropped")
	log.WithName("sub").WithValues("k", "v").V(8).Info("response body")
	log.Error(nil, "errors always")
	got := out.String()
	for _, want := range []string{"kept", "errors always"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing from %q", want, got)
		}
	}
	for _, unwanted := range []string{"dropped", "response body"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("%q logged above V(%d): %q", unwanted, maxLogLevel, got)
		}
	}
	if again := CapVerbosity(log); again.GetSink() != log.GetSink() {
		t.Error("capping a capped logger wraps it again (and shifts its call sites)")
	}
	if log.V(maxLogLevel + 1).Enabled() {
		t.Error("levels above the cap report enabled")
	}
}
