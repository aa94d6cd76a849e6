package release

import (
	"testing"

	"helm.sh/helm/v4/pkg/release"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// mustV1 returns a function taking what Helm's storage returns, failing t on
// an error or on a record that is not Helm's v1 release.
func mustV1(t testing.TB) func(release.Releaser, error) *helmrelease.Release {
	return func(r release.Releaser, err error) *helmrelease.Release {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		rel, err := asRelease(r)
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
}

// v1s converts what Helm's storage returns, for assertions.
func v1s(rs []release.Releaser, err error) ([]*helmrelease.Release, error) {
	out := make([]*helmrelease.Release, 0, len(rs))
	for _, r := range rs {
		rel, cerr := asRelease(r)
		if cerr != nil {
			return nil, cerr
		}
		out = append(out, rel)
	}
	return out, err
}

// v1 converts one record Helm's storage returns, for assertions.
func v1(r release.Releaser, err error) (*helmrelease.Release, error) {
	if r == nil {
		return nil, err
	}
	rel, cerr := asRelease(r)
	if cerr != nil {
		return nil, cerr
	}
	return rel, err
}
