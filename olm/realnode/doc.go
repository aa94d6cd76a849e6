// Package realnode runs the olm package's diagnosis against catalogs that
// OLM serves from images as pods, on the local cluster's real node: what a
// kwok node, whose pods never run, cannot show.
package realnode
