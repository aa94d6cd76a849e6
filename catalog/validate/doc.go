// Package validate checks a file-based catalog the way OLM will read it:
// operator-registry's model validation and chartpilot's upgrade-graph
// checks (one head per channel, no stranded bundle, no skip that strands
// users, no edge to an older version), every problem reported in one
// tree (Error) naming package, channel and bundle.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package validate
