// Package index answers OLM's registry gRPC API (api.Registry and the
// experimental api.ExperimentalRegistry) from memory, for one loaded
// file-based catalog.
//
// New converts the catalog once: every bundle of every channel becomes the
// api.Bundle values the queries return, and the packages, channel heads,
// replaced bundles and provided APIs are indexed in maps, so that each call
// is a map lookup and a send. Nothing is written to disk and nothing of the
// declarative config is kept: the caller may drop it once New returns.
//
// The answers are those of operator-registry's `opm serve` (its pkg/cache
// querier behind pkg/server), down to the error messages: Get* calls return
// bundles without replaces and skips, ListBundles returns them with both
// but leaves the CSV and manifests out of image-based bundles, and a miss
// is a gRPC Unknown error with opm's message. Where opm's answer depends on
// Go's map order (the bundle that replaces one that several bundles
// replace or skip), the index answers deterministically: a bundle that
// replaces it before one that only skips it, then the first by name.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package index
