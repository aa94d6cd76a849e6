// Package images builds the images a real node's cluster runs that nobody
// can pull here (the pod sandbox, CoreDNS, OLM, opm and the example's
// operand) from the binaries package toolchain built, and pushes them to the
// local registry. Each image is a few static binaries on an empty base,
// owned by root and run as a non-root user, so the same binaries always give
// the same digests.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package images
