// Package render writes a file-based catalog out for people and tools to
// read: Render as one FBC stream in a deterministic order (as `opm render`
// does), Graph as the upgrade graph of every channel, a mermaid flowchart
// or an SVG picture laid out without graphviz.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package render
