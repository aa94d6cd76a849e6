//go:build tools

// Package tools pins the components of the local cluster's real node: the
// container runtime, networking and DNS, each built from its Go module by
// `chartpilot cluster up --node=real` (see cluster/toolchain). The programs
// under this directory are small mains of our own: CoreDNS and the registry
// with only the plugins a local cluster needs, and the images nobody can pull
// here (the pod sandbox, cp for OLM's unpack Job, the gRPC health probe of catalog pods, the example's operand).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
	_ "github.com/opencontainers/runc"
)
