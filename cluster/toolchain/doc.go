// Package toolchain builds the local cluster's components (etcd, the Kubernetes
// control plane, kubectl, kwok and OLM) from their Go modules and caches the
// binaries, so that no binary is ever downloaded and a second run builds nothing.
//
// The versions live in the repository's tools module (tools/go.mod); a copy of
// that module is embedded here so that an installed chartpilot can build the
// same components anywhere the go command is available.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package toolchain
