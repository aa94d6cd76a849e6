// Package realnode proves the local cluster's real node end to end: an
// image built here runs from the local registry as its non-root user,
// probes, logs, Services, cluster DNS and the object store work from pods,
// and the host is left as it was. It holds tests only; `go test -short`
// skips them, and they wait for the machine's one real node
// (clustertest.LockRealNode). `make test` runs the realnode packages
// in a stream of their own beside the rest.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package realnode
