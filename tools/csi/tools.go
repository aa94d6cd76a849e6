//go:build tools

// Package tools is the local cluster's CSI storage: the external
// provisioner and snapshotter sidecars, the snapshot controller, and
// hostpath-csi, a small CSI driver of our own, built by `chartpilot cluster
// up` (see cluster/toolchain) on a real node. A module of its own, so that
// the sidecars never move the cluster's versions; its go.mod pins it to the
// cluster's Kubernetes line and versions, so that what they share compiles
// once.
package tools

import (
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller"
)
