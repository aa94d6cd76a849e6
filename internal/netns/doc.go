// Package netns runs code in a named network namespace: the real node's
// agents are started, and its kernel settings written, from an OS thread
// that has entered the node's namespace, so that neither needs a helper
// program (`ip netns exec` would give them a mount namespace of their own
// too, which the kubelet's mounts must not be kept in).
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package netns
