// Package clidoc writes the command reference, one Markdown page per
// command, from a cobra command tree: the reference is generated from the
// CLI itself, so that it cannot drift (a test compares the committed pages
// with what the tree gives).
//
// The program's top: it imports only cobra and pflag; only commands
// (cmd/...) import it.
package clidoc
