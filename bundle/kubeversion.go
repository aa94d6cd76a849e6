package bundle

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"

	msemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/scaffold"
)

// versionLiteral finds the versions a constraint names (prerelease and
// build suffixes left out: Kubernetes releases have none that matter).
var versionLiteral = regexp.MustCompile(`v?(\d+)(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?`)

// maxMinor bounds the 1.x releases tried besides the constraint's own.
const maxMinor = 64

// lowestKubeVersion is the lowest Kubernetes version (major.minor.patch) a
// Helm kubeVersion constraint allows (Masterminds semver, what Helm
// checks it with). bounded is false when it allows 0.0.0, i.e. has no lower
// bound. The candidates are the versions the constraint names, the patch
// and minor after each, and every 1.x.0: the lowest allowed version of a
// constraint is one of those.
func lowestKubeVersion(constraint string) (v semver.Version, bounded bool, err error) {
	return lowestKubeVersionFrom(constraint, semver.Version{})
}

// lowestKubeVersionFrom is the lowest version from (and including) from
// that constraint allows; bounded is false when that is from itself.
func lowestKubeVersionFrom(constraint string, from semver.Version) (v semver.Version, bounded bool, err error) {
	c, err := msemver.NewConstraint(constraint)
	if err != nil {
		return v, false, fmt.Errorf("not a version constraint: %w", err)
	}
	floor := msemver.New(from.Major, from.Minor, from.Patch, "", "")
	candidates := []*msemver.Version{floor}
	for m := uint64(0); m <= maxMinor; m++ {
		candidates = append(candidates, msemver.New(1, m, 0, "", ""))
	}
	for _, lit := range versionLiteral.FindAllStringSubmatch(constraint, -1) {
		var parts [3]uint64
		for i, p := range lit[1:] {
			if _, err := fmt.Sscan(p, &parts[i]); err != nil {
				parts[i] = 0 // absent or a wildcard
			}
		}
		base := msemver.New(parts[0], parts[1], parts[2], "", "")
		next := base.IncPatch()
		nextMinor := base.IncMinor()
		candidates = append(candidates, base, &next, &nextMinor)
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].LessThan(candidates[j]) })
	for _, cand := range candidates {
		if !cand.LessThan(floor) && c.Check(cand) {
			v := semver.Version{Major: cand.Major(), Minor: cand.Minor(), Patch: cand.Patch()}
			return v, !cand.Equal(floor), nil
		}
	}
	if from.Equals(semver.Version{}) {
		return v, false, errors.New("it allows no version")
	}
	return v, false, fmt.Errorf("it allows no version from %s", from)
}

// minKubeVersion is the lowest Kubernetes version, from
// DefaultMinKubeVersion (what the runtime needs) up, that every chart's
// kubeVersion constraint allows. A constraint it cannot read, or that
// allows no such version, is warned about and left out.
func (g *generation) minKubeVersion() string {
	best := semver.MustParse(DefaultMinKubeVersion)
	watches, err := scaffold.LoadWatches(g.opts.Dir)
	if err != nil {
		return best.String()
	}
	constraints := map[string]string{}
	for _, w := range watches {
		c, err := chart.Load(filepath.Join(g.opts.Dir, w.Chart))
		if err == nil && c.Helm.Metadata.KubeVersion != "" {
			constraints[c.Name()] = c.Helm.Metadata.KubeVersion
		}
	}
	// Raising the version for one chart may leave a range another allows:
	// go on until all allow it (each round raises it, or ends).
	for round := 0; round <= len(constraints); round++ {
		raised := false
		for _, name := range sortedKeys(constraints) {
			kv := constraints[name]
			v, bounded, err := lowestKubeVersionFrom(kv, best)
			if err != nil {
				g.warn("chart %s: Chart.yaml kubeVersion %q: %v; minKubeVersion is not derived from it", name, kv, err)
				delete(constraints, name)
				continue
			}
			if bounded {
				best, raised = v, true
			}
		}
		if !raised {
			break
		}
	}
	return best.String()
}
