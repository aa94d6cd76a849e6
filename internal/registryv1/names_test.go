package registryv1

import (
	"strings"
	"testing"
)

// One rule for package and channel names, which bundle generate and the
// catalog commands share.
func TestNames(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		check       func(string) error
		wantErr     string // empty: accepted
	}{
		{name: "a package", value: "my-operator", check: CheckPackageName},
		{name: "no package", value: "", check: CheckPackageName, wantErr: "package name must be set"},
		{name: "an upper-case package", value: "My-Operator", check: CheckPackageName, wantErr: `invalid package name "My-Operator"`},
		{name: "a package with a dot", value: "my.operator", check: CheckPackageName, wantErr: `invalid package name "my.operator"`},
		{name: "a channel", value: "stable", check: CheckChannelName},
		{name: "a minor-scoped channel", value: "stable-v1.2", check: CheckChannelName},
		{name: "no channel", value: "", check: CheckChannelName, wantErr: "channel names must not be empty"},
		{name: "a channel with a space", value: "stable channel", check: CheckChannelName, wantErr: `invalid channel name "stable channel"`},
		{name: "an upper-case channel", value: "Stable", check: CheckChannelName, wantErr: `invalid channel name "Stable"`},
		{name: "a channel with a comma", value: "a,b", check: CheckChannelName, wantErr: `invalid channel name "a,b"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.value)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%q refused: %v", tt.value, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("%q: error %v, want %q", tt.value, err, tt.wantErr)
			}
		})
	}
}
