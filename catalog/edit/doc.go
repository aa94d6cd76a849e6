// Package edit changes a file-based catalog directory: Init adds a package,
// Add publishes a registry+v1 bundle in it and places the bundle in its
// channels by semver (a replaces chain in version order, and a skipRange
// so any older version upgrades straight to the newest), Remove and
// Deprecate change it. Bundles are published image-based (the blob names
// the bundle image, OLM unpacks it) or inline (no image, every manifest in
// an olm.bundle.object property). Add compares the bundle's CRDs with those
// of every bundle it upgrades (crddiff) and keeps clusters off upgrades
// that drop a stored version. Every change is validated first (package
// validate) and written atomically: a failed change leaves the directory
// as it was.
//
// Writers of one directory serialize on a lock (flock of the sibling file
// LockPath names, outside the directory so that operator-registry's loaders
// and catalog images never see it): concurrent changes all land. Under the
// lock, a writer loads the whole catalog and refuses one with a file that
// does not load (ErrCatalogUnreadable); only Init creates the directory,
// and no lock file is made beside one that does not exist.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package edit
