// Command chartpilot-operator is the Helm operator runtime alone: `run`, with
// the same flags as `chartpilot run`, and none of chartpilot's build-time
// commands. The operator image runs it: a smaller static binary, quicker to
// cross-build, with fewer pages resident.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package main
