// Package scaffold writes a Helm operator project from a chart in the layout
// operator-sdk's helm plugin writes (PROJECT, watches.yaml, helm-charts/,
// config/ kustomize directories, Dockerfile, a Makefile that includes the
// targets of operator.mk), with what
// operator-sdk leaves to the author derived from the chart: least-privilege
// RBAC (package rbac) split by scope into a Role and a ClusterRole
// (RoleFile), a CRD with a real schema (package crdschema), and a base CSV
// that says what the chart says of itself (CSVMetadataOf).
//
// Init builds the whole project in a temporary directory beside the target
// and renames it into place, so a failed init leaves nothing behind.
// CreateAPI adds another kind, from another chart, to an existing project.
// Generate re-derives RBAC and CRDs after a chart change. Adopt brings a
// project written by operator-sdk's helm plugin to the same point, keeping
// the author's edits (backups under BackupDir, or a refusal).
//
// Stage scaffold of chart -> scaffold -> bundle -> catalog -> olm/cluster
// -> doctor -> cmd: it may import earlier stages, the runtime and
// internal/, and must not import a later stage (bundle, scorecard, catalog,
// olm, cluster, apply, doctor, cmd/).
package scaffold
