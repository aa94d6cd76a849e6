// Package catalogtest writes the registry+v1 bundles and file-based
// catalogs the tests of the catalog packages work on.
//
// A test fixture of stage catalog: only tests import it, and it imports
// nothing of chartpilot but catalog/fbc and catalog/bundledir.
package catalogtest
