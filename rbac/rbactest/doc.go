// Package rbactest proves RBAC on a real API server: it binds roles to a
// fresh ServiceAccount, runs the Helm actions an operator runs (install,
// upgrade, drift repair, uninstall) while impersonating it, and reports what
// the API server grants it. The rbac and scaffold tests use it; so can the
// runtime's.
//
// A fixture for tests: only tests import it; no package's code does.
package rbactest
