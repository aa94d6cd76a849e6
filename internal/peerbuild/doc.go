// Package peerbuild builds the peer binaries tests compare chartpilot
// against (opm, catalogd's serving code) from their pinning modules under
// peers/, once per content and Go version, into the user's cache.
//
// A bottom helper: it imports nothing of chartpilot above internal/.
package peerbuild
