// Package fbc reads and writes file-based catalogs (FBC) fast, with the
// same results as operator-registry's declcfg package.
//
// declcfg parses every YAML document with a YAML 1.1 parser, converts it to
// JSON, decodes that into a map and encodes it again, and parses every
// bundle object's JSON with the YAML parser once more; on a catalog of
// inline bundles that is most of the time `opm render`, `opm validate` and
// `opm serve` spend. This package takes short cuts where the input allows
// one (documents in the block style declcfg writes, bundle objects in
// JSON) and falls back to declcfg's own path for anything else, so that
// the results are equal for every input (the tests compare them).
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package fbc
