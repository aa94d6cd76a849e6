// Package cluster runs a local Kubernetes cluster with real Operator Lifecycle
// Manager as processes on loopback: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok (fake nodes whose pods become
// Running and Ready without a container runtime) and OLM's olm and catalog
// operators. It needs no Docker engine and no kubelet; every binary is built
// from its Go module by package toolchain.
//
// A cluster lives in a state directory (certificates, etcd data, logs, pid
// files, kubeconfigs). Its components are daemons: they keep running after the
// command that started them exits, until Down.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package cluster
