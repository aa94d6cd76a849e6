// Package backupctl creates a backup or a restore of a chartpilot
// operator's custom resource (the kinds of operator/backup/api) and follows
// it to its end, printing progress: what `chartpilot backup` and
// `chartpilot restore` run.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package backupctl
