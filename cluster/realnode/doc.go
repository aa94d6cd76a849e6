// Package realnode proves what a start of the local cluster on the real
// node undoes when it fails half way, and what a takeover of a killed
// cluster's node removes, with the host's own Kubernetes (decoys) left as
// it was. It holds tests only; `go test -short` skips them, and they wait
// for the machine's one real node (clustertest.LockRealNode). `make test`
// runs the realnode packages in a stream of their own beside the rest.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package realnode
