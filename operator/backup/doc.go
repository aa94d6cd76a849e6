// Package backup reconciles the <Kind>Backup and <Kind>Restore objects of
// a chartpilot operator (their types are in package api): a backup keeps a
// custom resource, its release's chart version and values, the Secrets and
// ConfigMaps the release renders and its PersistentVolumeClaims' specs in a
// contents Secret owned by the Backup, and the claims' files as tar+gzip
// archives on the target, written by short-lived mover pods that run the
// operator's own image. A restore recreates the claims and refills them
// with mover pods before it creates the custom resource, so the chart
// adopts them. The operator itself never holds a volume's data.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package backup
