// Package runcmd is the `run` command, the Helm operator runtime, with the
// flags that reach a cluster. chartpilot and the operator image's
// chartpilot-operator binary both build their commands from it, so that the
// two take the same flags. It imports the runtime (package operator) and none
// of the build-time packages: whatever it imports ends up in the operator
// image.
package runcmd
