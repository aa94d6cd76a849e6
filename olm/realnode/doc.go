// Package realnode runs the olm package's diagnosis against catalogs that
// OLM serves from images as pods, on the local cluster's real node: what a
// kwok node, whose pods never run, cannot show.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package realnode
