package registryv1

import (
	"errors"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in string
		// want is the version printed back; empty: an error containing problem.
		want, problem string
	}{
		{in: "0.3.0", want: "0.3.0"},
		{in: "1.0.0-rc.1+build.5", want: "1.0.0-rc.1+build.5"},
		{in: "0.3", problem: "it has 2 number(s) where three are wanted"},
		{in: "1", problem: "it has 1 number(s) where three are wanted"},
		{in: "1.2.3.4", problem: "it has 4 number(s) where three are wanted"},
		{in: "0latest", problem: `the major number "0latest" is not a number`},
		{in: "latest", problem: `the major number "latest" is not a number`},
		{in: "1.x.0", problem: `the minor number "x" is not a number`},
		{in: "v1.0.0", problem: "it starts with a v"},
		{in: "1.02.0", problem: `the minor number "02" has a leading zero`},
		{in: "1..0", problem: "the minor number is empty"},
		{in: "", problem: "it is empty"},
		{in: "1.0.0-", problem: "Prerelease"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			if tt.want != "" {
				if err != nil || v.String() != tt.want {
					t.Fatalf("ParseVersion(%q) = %v, %v; want %s", tt.in, v, err, tt.want)
				}
				return
			}
			var verr *VersionError
			if !errors.As(err, &verr) || verr.Version != tt.in || !strings.Contains(verr.Problem, tt.problem) || !strings.Contains(err.Error(), VersionRule) {
				t.Fatalf("ParseVersion(%q) error = %v, want a VersionError saying %q and the rule", tt.in, err, tt.problem)
			}
		})
	}
}
