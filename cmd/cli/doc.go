// Package cli holds chartpilot's cobra commands. Each command turns its flags
// into the options of a library package and calls it; no logic lives here.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package cli
