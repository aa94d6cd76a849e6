// Package kustomize builds a kustomization with kustomize as a library (no
// kustomize binary), with images replaced as `kustomize edit set image`
// would, into objects in the order package apply applies them.
//
// It stands apart from package apply so that what only applies objects
// (the local cluster's add-ons) does not carry kustomize, whose plugin
// loader makes every binary that links it dynamically linkable (Go's
// plugin package), larger and slower to link.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package kustomize
