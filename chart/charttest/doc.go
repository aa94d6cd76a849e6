// Package charttest writes charts for tests from the contents of their files.
//
// A fixture for tests: only tests import it; no package's code does.
package charttest
