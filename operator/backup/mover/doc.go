// Package mover copies a volume's files to and from a tar+gzip archive as a
// stream: what the short-lived mover pods of a backup or a restore run
// (`chartpilot-operator mover`). Nothing is held in memory beyond a copy
// buffer, whatever the volume's size.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package mover
