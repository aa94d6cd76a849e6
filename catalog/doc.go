// Package catalog builds, checks and serves file-based catalogs (FBC), the
// format OLM reads packages, channels and bundles from.
//
// A catalog directory holds one directory per package with a catalog.yaml
// (or catalog.json) in operator-registry's declcfg format:
//
//	catalog/
//	  my-operator/catalog.yaml   olm.package, olm.channel, olm.bundle, olm.deprecations
//
// Init adds a package; Add publishes a registry+v1 bundle directory in it
// and places the bundle in its channels by semver (a replaces chain in
// version order, and a skipRange so any older version upgrades straight to
// the newest); Remove and Deprecate change it. Bundles are published
// image-based (the blob names the bundle image, OLM unpacks it) or inline
// (no image, every manifest in an olm.bundle.object property, which OLM
// installs without unpacking anything). Every change is validated first
// and written atomically: a failed change leaves the directory as it was.
//
// Writers of one directory serialize on a lock (flock of the sibling file
// LockPath names, outside the directory so that operator-registry's loaders
// and catalog images never see it): concurrent changes all land. Under the
// lock, a writer loads the whole catalog and refuses one with a file that
// does not load (ErrCatalogUnreadable); only Init creates the directory,
// and no lock file is made beside one that does not exist. Bundle versions
// follow one rule, ParseVersion's.
//
// Validate runs operator-registry's model validation and chartpilot's graph
// checks and reports every problem as a tree naming package, channel and
// bundle. Render writes the catalog as one deterministic stream, Graph
// draws the upgrade graphs as mermaid or an SVG picture, and Serve answers
// OLM's registry gRPC API for a directory or a catalog image, as `opm serve`
// does, on loopback unless told otherwise, from an in-memory index of the
// catalog (package catalog/index), and with ServeOptions.HTTP the HTTP API
// catalogd (OLM v1) serves a ClusterCatalog's content on, as catalogd
// answers it (package catalog/httpapi).
//
// BuildImage builds the catalog image without a container engine (the FBC
// under /configs, the serving cache pre-built, the configs label);
// WriteOCILayout, PushImage and PullImage move it with go-containerregistry,
// and WriteDockerfile writes the equivalent catalog.Dockerfile.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package catalog
