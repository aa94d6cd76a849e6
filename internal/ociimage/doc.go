// Package ociimage builds, stores, pushes and pulls container images without
// a container engine, for the catalog and bundle packages: reproducible
// layers (sorted entries, zero times, root ownership), OCI image layouts, a
// local store of built images between build and push, and registry access
// with the docker credentials.
//
// Built images are kept between `build` and `push` in a Store: one OCI
// image layout (default $XDG_CACHE_HOME/chartpilot/images) whose index names
// each image by its full reference; a new build under the same reference
// replaces the old one.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package ociimage
