// Command chartpilot-docs writes chartpilot's command reference
// (docs/reference by default) from its command tree: `make docs` runs it.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package main
