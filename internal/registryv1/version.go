package registryv1

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
)

// VersionError is ParseVersion's error: the version, what is wrong with it
// and, in its message, what is expected.
type VersionError struct {
	Version string
	// Problem says what keeps Version from being semver.
	Problem string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("version %q is not semver: %s; want %s", e.Version, e.Problem, VersionRule)
}

// VersionRule states the one rule for bundle versions, for messages.
const VersionRule = "MAJOR.MINOR.PATCH, three numbers without leading zeros, with an optional -PRERELEASE and +BUILD and no leading v (e.g. 0.3.0, 1.0.0-rc.1)"

// ParseVersion parses the version of a bundle: semantic versioning 2.0.0,
// strictly (VersionRule). It is the one rule for bundle versions: `bundle
// generate --version` and the CSV's spec.version that `catalog add`
// publishes both go through it, and OLM orders upgrades by it. The error
// is a *VersionError.
func ParseVersion(s string) (semver.Version, error) {
	v, err := semver.Parse(s)
	if err == nil {
		return v, nil
	}
	return semver.Version{}, &VersionError{Version: s, Problem: versionProblem(s, err)}
}

// versionProblem says what keeps s from being semver; err is the parser's
// answer, used for what the checks here do not name.
func versionProblem(s string, err error) string {
	if strings.TrimSpace(s) == "" {
		return "it is empty"
	}
	if s[0] == 'v' || s[0] == 'V' {
		return "it starts with a v"
	}
	core, _, _ := strings.Cut(s, "+")
	core, _, _ = strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	names := []string{"major", "minor", "patch"}
	for i, p := range parts {
		if i >= len(names) {
			break
		}
		switch {
		case p == "":
			return fmt.Sprintf("the %s number is empty", names[i])
		case strings.Trim(p, "0123456789") != "":
			return fmt.Sprintf("the %s number %q is not a number", names[i], p)
		case len(p) > 1 && p[0] == '0':
			return fmt.Sprintf("the %s number %q has a leading zero", names[i], p)
		}
	}
	if len(parts) != 3 {
		return fmt.Sprintf("it has %d number(s) where three are wanted", len(parts))
	}
	return err.Error()
}
