// Package oci ships a file-based catalog as a catalog image: BuildImage
// builds it without a container engine (the FBC under /configs, the serving
// cache pre-built, the configs label), Build publishes bundle images in the
// catalog first (package edit), PullImage and ExtractConfigs read one back,
// and WriteDockerfile writes the equivalent catalog.Dockerfile. Images are
// written and pushed with internal/ociimage.
//
// Stage catalog of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (olm, cluster, apply, doctor, cmd/).
package oci
