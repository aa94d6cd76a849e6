// Package demo runs chartpilot's whole journey on the local cluster, the way
// an operator author would: scaffold an operator from the example chart,
// generate and check its bundle, publish it in a catalog, install it through
// an OLM Subscription, let it reconcile a custom resource, publish a new
// version and watch OLM and the operator upgrade, then remove it all.
//
// Every step runs the chartpilot binary (and make, kubectl) as commands, with
// each command's output in a log file; the summary says what each step did
// and how long it took.
//
// The program's top: it may import any stage; only commands (cmd/...)
// import it.
package demo
