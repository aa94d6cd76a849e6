// Package pki generates the local cluster's certificate authority, the
// certificates of its components and the service-account signing key.
//
// Everything is generated on this machine, once, and kept in the cluster's
// state directory: running it again keeps what exists, so restarting a cluster
// does not invalidate kubeconfigs or service-account tokens already issued.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package pki
