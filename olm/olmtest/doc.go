// Package olmtest makes small operator catalogs for tests that install
// through OLM on the local cluster: an inline registry+v1 bundle (no image
// to unpack), a file-based catalog of it, and a registry server on loopback.
//
// A fixture for tests: only tests import it; no package's code does.
package olmtest
