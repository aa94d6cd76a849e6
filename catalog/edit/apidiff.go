package edit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/catalog/fbc"
	"github.com/chartpilot/chartpilot/crddiff"
)

// APIChange is an unsafe CRD change from a bundle the added one upgrades.
type APIChange struct {
	// Previous is the bundle upgraded from.
	Previous string `json:"previous"`
	crddiff.Change
}

// checkAPIChanges compares the added bundle's CRDs with those of every
// bundle it upgrades in any channel (the one it replaces, the ones it
// skips, those in its skipRange) by OLM v1's upgrade-safety rules. Unsafe
// changes fail with crddiff.ErrUnsafe unless allowUnsafe.
// An image-based bundle whose image cannot be pulled (not pushed yet, no
// network) is not compared: that is a warning, not a refusal.
func checkAPIChanges(ctx context.Context, pf *packageFile, b *bundledir.Bundle, allowUnsafe bool) (changes []APIChange, warnings []string, err error) {
	crds, err := crddiff.FromObjects(b.CRDs)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	prevs, err := upgradedFrom(pf, b.Name)
	if err != nil {
		return nil, nil, err
	}
	var out []APIChange
	for _, prev := range prevs {
		old, err := bundledir.CRDs(ctx, prev)
		if errors.Is(err, bundledir.ErrPull) {
			warnings = append(warnings, fmt.Sprintf("the CRDs of %s were not compared with those of %s, which it upgrades: %v", b.Name, prev.Name, err))
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("comparing the CRDs of %s with %s: %w", b.Name, prev.Name, err)
		}
		for _, c := range crddiff.CompareAll(old, crds) {
			out = append(out, APIChange{Previous: prev.Name, Change: c})
		}
	}
	if len(out) > 0 && !allowUnsafe {
		var sb strings.Builder
		for _, c := range out {
			fmt.Fprintf(&sb, "\n  since %s: %s", c.Previous, c.Change)
		}
		return nil, nil, fmt.Errorf("%w: %s would break the CRs of the bundles it upgrades:%s\npass --allow-unsafe-api-changes to publish it anyway", crddiff.ErrUnsafe, b.Name, sb.String())
	}
	return out, warnings, nil
}

// upgradedFrom are the bundles a cluster may upgrade from to the named one,
// in any channel: its replaces, its skips, and the entries its skipRange
// holds, in name order.
func upgradedFrom(pf *packageFile, name string) ([]*declcfg.Bundle, error) {
	byName := map[string]*declcfg.Bundle{}
	for i := range pf.cfg.Bundles {
		byName[pf.cfg.Bundles[i].Name] = &pf.cfg.Bundles[i]
	}
	names := map[string]bool{}
	for _, ch := range pf.cfg.Channels {
		for _, e := range ch.Entries {
			if e.Name != name {
				continue
			}
			if e.Replaces != "" {
				names[e.Replaces] = true
			}
			for _, s := range e.Skips {
				names[s] = true
			}
			if e.SkipRange == "" {
				continue
			}
			inRange, err := semver.ParseRange(e.SkipRange)
			if err != nil {
				return nil, fmt.Errorf("channel %s: bundle %s: skipRange %q: %w", ch.Name, name, e.SkipRange, err)
			}
			for _, other := range ch.Entries {
				if b := byName[other.Name]; b != nil && other.Name != name {
					v, err := fbc.BundleVersion(b)
					if err != nil {
						return nil, err
					}
					if inRange(v) {
						names[other.Name] = true
					}
				}
			}
		}
	}
	var out []*declcfg.Bundle
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if b := byName[n]; b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}
