package runcmd

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// From -v=8 on client-go logs response bodies: a Helm operator's hold its
// release Secrets, so the flag refuses those levels.
func TestVerbosityStopsBelowBodies(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		wantErr string
		enabled klog.Level
	}{
		{arg: "0", enabled: 0},
		{arg: "7", enabled: 7},
		{arg: "8", wantErr: "Secrets"},
		{arg: "10", wantErr: "Secrets"},
		{arg: "high", wantErr: "from 0 to 7"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			AddVerbosityFlag(fs)
			t.Cleanup(func() { _ = fs.Set("v", "0") })
			err := fs.Parse([]string{"-v=" + tc.arg})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("-v=%s: got %v, want an error saying %q", tc.arg, err, tc.wantErr)
				}
				if klog.V(MaxVerbosity + 1).Enabled() {
					t.Fatalf("-v=%s was refused but klog logs at level %d", tc.arg, MaxVerbosity+1)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !klog.V(tc.enabled).Enabled() || klog.V(tc.enabled+1).Enabled() {
				t.Fatalf("-v=%s: klog's level is not %d", tc.arg, tc.enabled)
			}
		})
	}
}
