// Package layers holds the module's layering, as data, and the test that
// enforces it on the imports `go list` reports: the stages a Helm chart
// goes through (chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd) above the runtime (operator/) and the helpers (internal/).
// A package imports only its own stage and those before it; the runtime
// imports no build-time package; internal/ imports nothing above it; only
// commands import cmd/. Every package has a doc.go saying so; its first
// sentence is the package's row in docs/development.md, whose tables, and
// the relative links of the README and docs/, its tests check too.
//
// It has no code: it imports nothing, and nothing imports it.
package layers
