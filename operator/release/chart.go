package release

import chart "helm.sh/helm/v4/pkg/chart/v2"

// forAction returns a copy of ch for one Helm action to change: an install
// or upgrade removes, from the chart it is given, the subcharts its values
// disable (and imports values into it), so a chart parsed once and shared by
// every release of a watch would lose a subchart for all releases after one
// that disables it. Only the chart tree and its dependency metadata are
// copied; the templates, files and values, which Helm only reads, are
// shared.
func forAction(ch *chart.Chart) *chart.Chart {
	if ch == nil {
		return nil
	}
	c := *ch
	if ch.Metadata != nil {
		md := *ch.Metadata
		md.Dependencies = make([]*chart.Dependency, len(ch.Metadata.Dependencies))
		for i, d := range ch.Metadata.Dependencies {
			if d != nil {
				dd := *d
				d = &dd
			}
			md.Dependencies[i] = d
		}
		if ch.Metadata.Dependencies == nil {
			md.Dependencies = nil
		}
		c.Metadata = &md
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, d := range ch.Dependencies() {
		deps = append(deps, forAction(d))
	}
	c.SetDependencies(deps...)
	return &c
}
