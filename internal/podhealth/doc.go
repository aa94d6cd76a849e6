// Package podhealth says, in a line per pod, why pods are not running and
// ready: what a user would otherwise dig out of `kubectl describe` and
// `kubectl logs`. The cluster, doctor and olm commands name pod-level
// failures with it.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package podhealth
