// Package catalog holds chartpilot's file-based catalogs (FBC), the format
// OLM reads packages, channels and bundles from, one package for each thing
// a user does with a catalog; each imports only those listed after it:
//
//	serve      serve OLM's registry gRPC API and catalogd's HTTP API for it, or for its image
//	oci        ship it as a catalog image: build (publishing bundles first), pull, Dockerfile
//	edit       change it: init a package, add, remove or deprecate a bundle
//	render     write it out: one FBC stream, or the upgrade graphs (mermaid, SVG)
//	validate   check it: operator-registry's validation and the upgrade-graph checks
//	bundledir  read a registry+v1 bundle into its catalog form
//	fbc        read and write FBC files fast; the catalog's model helpers
//
// index and httpapi are serve's in-memory answers for the two APIs.
//
// A catalog directory holds one directory per package with a catalog.yaml
// (or catalog.json) in operator-registry's declcfg format:
//
//	catalog/
//	  my-operator/catalog.yaml   olm.package, olm.channel, olm.bundle, olm.deprecations
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package catalog
