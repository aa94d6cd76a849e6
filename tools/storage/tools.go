//go:build tools

// Package tools is the local cluster's storage: small mains of our own,
// built by `chartpilot cluster up` (see cluster/toolchain) like the real
// node's tools. volume-permissions makes the volumes of
// kube-controller-manager's hostPath provisioner writable by non-root pods;
// object-store is the cluster's S3-compatible object store.
package tools
