package edit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/chartpilot/chartpilot/catalog/bundledir"
	"github.com/chartpilot/chartpilot/crddiff"
)

// storageGuard tells, for placement, whether a bundle may be reached
// straight from an older one: not when its CRDs drop a version the older
// bundle's CRDs store CRs in (crddiff's storedVersionRemoval). A cluster
// at the older bundle holds CRs in that version; the API server could not
// read them after such an upgrade, and OLM refuses it. Such a cluster must
// upgrade through the releases in between, which serve both versions, and
// migrate its CRs (chartpilot olm migrate) first: the newer bundle's
// skipRange starts above the older one.
//
// Only bundles whose CRDs are inline (olm.bundle.object) are judged:
// placement reads no image. A dropped stored version of an image-based
// bundle is found by the check of catalog add instead.
type storageGuard struct {
	bundles map[string]*declcfg.Bundle
	crds    map[string][]*apiextensionsv1.CustomResourceDefinition
	// dropped records, by "older\x00newer", the detail of each pair found.
	dropped map[string]string
}

func newStorageGuard(cfg *declcfg.DeclarativeConfig) *storageGuard {
	g := &storageGuard{bundles: map[string]*declcfg.Bundle{}, crds: map[string][]*apiextensionsv1.CustomResourceDefinition{}, dropped: map[string]string{}}
	for i := range cfg.Bundles {
		g.bundles[cfg.Bundles[i].Name] = &cfg.Bundles[i]
	}
	return g
}

// drops says whether newer's CRDs drop a version older's store CRs in.
func (g *storageGuard) drops(older, newer string) bool {
	o, n := g.inlineCRDs(older), g.inlineCRDs(newer)
	if o == nil || n == nil {
		return false
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range o {
		byName[c.Name] = c
	}
	var details []string
	for _, c := range n {
		if old := byName[c.Name]; old != nil {
			if gone := crddiff.DroppedStoredVersions(old, c); len(gone) > 0 {
				details = append(details, fmt.Sprintf("%s drops stored version(s) %s", c.Name, strings.Join(gone, ", ")))
			}
		}
	}
	if len(details) == 0 {
		return false
	}
	g.dropped[older+"\x00"+newer] = strings.Join(details, "; ")
	return true
}

// notes say, for each bundle named, which older bundle it no longer skips
// from, and why.
func (g *storageGuard) notes(name string) []string {
	var out []string
	for pair, detail := range g.dropped {
		older, newer, _ := strings.Cut(pair, "\x00")
		if newer == name {
			out = append(out, fmt.Sprintf("%s does not skip from %s and older (%s): clusters there store CRs in a version it drops; they upgrade through the releases in between, then migrate their CRs (the operator at start-up, or chartpilot olm migrate)", newer, older, detail))
		}
	}
	slices.Sort(out)
	return out
}

// inlineCRDs are a bundle's CRDs from its olm.bundle.object properties;
// nil when it has none or they cannot be read.
func (g *storageGuard) inlineCRDs(name string) []*apiextensionsv1.CustomResourceDefinition {
	if crds, ok := g.crds[name]; ok {
		return crds
	}
	g.crds[name] = nil
	b := g.bundles[name]
	if b == nil {
		return nil
	}
	props, err := property.Parse(b.Properties)
	if err != nil {
		return nil
	}
	crds, err := bundledir.InlineCRDs(name, props.BundleObjects)
	if err != nil || len(crds) == 0 {
		return nil
	}
	g.crds[name] = crds
	return crds
}
