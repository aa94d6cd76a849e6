// Package testbin hands tests the product's binaries, chartpilot and
// chartpilot-operator, built once. `make test` builds them (make build)
// before any test runs and names their directory in $CHARTPILOT_TEST_BIN,
// so that no test compiles the product on its own: on a cold 2-core
// machine each such build took minutes, several of them ran side by side,
// and the tests waiting on them ran out of time. A plain `go test` without
// that variable builds them once into the module's bin/, as make build
// does.
//
// A bottom helper for tests: it imports nothing of chartpilot above
// internal/.
package testbin
