//go:build tools

// Package tools pins the local cluster's components: tools/ holds only what
// runs in the local cluster (test peers are in peers/). Each is built from
// its Go module by `chartpilot cluster up` (see cluster/toolchain); nothing
// is downloaded as a binary. The real node's container runtime, networking
// and DNS have a module of their own in node/, the storage in storage/ and
// csi/, OLM v1 in olmv1/.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-lifecycle-manager/util/cpb"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
