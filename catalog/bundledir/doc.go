// Package bundledir reads a registry+v1 bundle (a directory, an fs.FS or
// an image) into its catalog form: the olm.bundle blob, published inline
// (every manifest in an olm.bundle.object property) or image-based, with
// what its package needs from it (name, version, channels, description,
// icon, CRDs); CRDs reads the CRDs of a catalog bundle back, from its
// olm.bundle.object properties or its image.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package bundledir
