// Package version reports what chartpilot is built from: its own version, the
// Kubernetes, Helm and OLM libraries linked into it (read from the binary's
// build information, so they cannot drift from go.mod) and the versions of the
// local cluster's components.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package version
