package clustertest

import "testing"

// Only a cluster SharedRealNode made is one a dead test binary may have
// left; a user's, or another test's, is never taken down.
func TestSharedStateDir(t *testing.T) {
	for _, tc := range []struct {
		claimant string
		want     string
	}{
		{"/tmp/chartpilot-realnode-123/cluster/node", "/tmp/chartpilot-realnode-123/cluster"},
		{"", ""},
		{"/root/.cache/chartpilot/demo/cluster/node", ""},
		{"/tmp/TestJourney123/001/cluster/node", ""},
		{"/tmp/x/chartpilot-realnode-123/cluster/node", ""},
		{"/tmp/chartpilot-realnode-123/other/node", ""},
	} {
		got, ok := sharedStateDir(tc.claimant, "/tmp")
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.claimant, got, tc.want)
		}
	}
}
