// Package bundle turns a chartpilot (operator-sdk Helm layout) project into
// an OLM registry+v1 bundle and checks it.
//
// Generate builds config/manifests with kustomize (as a library) and writes
// bundle/manifests (the ClusterServiceVersion, the CRDs, and the objects the
// CSV does not carry, such as Services), bundle/metadata/annotations.yaml,
// bundle/tests/scorecard/config.yaml and bundle.Dockerfile, atomically and
// reproducibly: the same input gives byte-identical output. The RBAC bound
// to the manager's ServiceAccount becomes the CSV's permissions (Roles: the
// namespaced rules, which OLM grants in the install mode's namespaces) and
// clusterPermissions (ClusterRoles); relatedImages list every image
// reference of every render of the charts (see FoundImage).
//
// Assess computes the capability level from evidence (what the chartpilot
// runtime does for the operator, what the bundle declares, what scorecard
// proved); Generate writes it into the CSV and refuses a higher declared
// level unless forced.
//
// Validate runs every validator of operator-framework/api on a bundle
// directory and names the file and field of each finding.
//
// BuildImage and BuildOperatorImage make the bundle image and the operator
// image without a container engine; the images are reproducible.
//
// Stage bundle of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (catalog, olm, cluster, apply, doctor,
// cmd/).
package bundle
