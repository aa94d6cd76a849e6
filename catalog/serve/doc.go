// Package serve answers OLM's registry gRPC API for a catalog directory or
// a catalog image, as `opm serve` does, on loopback unless told otherwise,
// from an in-memory index of the catalog (package catalog/index), and with
// Options.HTTP the HTTP API catalogd (OLM v1) serves a ClusterCatalog's
// content on, as catalogd answers it (package catalog/httpapi).
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package serve
