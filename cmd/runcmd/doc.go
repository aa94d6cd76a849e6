// Package runcmd is the `run` command, the Helm operator runtime, with the
// flags that reach a cluster, and the shape of every command's options
// (Options, RunE; Inspect lets a test read a command's options). chartpilot
// and the operator image's chartpilot-operator binary both build their
// commands from it, so that the two take the same flags.
//
// It imports only the runtime (operator/) and internal/: whatever it
// imports ends up in the operator image. Only commands import cmd/.
package runcmd
