// Package helmcompat holds the tests that need Helm 3 and Helm 4 side by
// side: chartpilot's runtime is on Helm 4, and the product module does not
// require Helm 3 at all. They check that release records stay readable by
// both libraries, whichever wrote them, and that charts render the same
// manifests under both.
package helmcompat
