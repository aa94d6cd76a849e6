//go:build tools

// Package opm pins opm, operator-registry's catalog tool, which the catalog
// tests and benchmarks compare chartpilot's catalogs and registry server
// with. It is a module of its own: operator-registry v1.73.0 needs the
// Kubernetes 1.36 line, which helm-operator-plugins v0.8.0 (tools/peers)
// does not build with. Build it with
//
//	go build -tags "json1 containers_image_openpgp" -o opm github.com/operator-framework/operator-registry/cmd/opm
//
// (the tags avoid the gpgme C library).
package opm

import _ "github.com/operator-framework/operator-registry/cmd/opm"
