// Package rbac derives least-privilege RBAC for a Helm operator from the chart
// it manages: it renders the chart (default values, the samples' values, the
// gates explored and each choice of a value that picks a kind), scans its
// templates for kinds no render created, resolves every kind to its resource
// and scope, and grants exactly the verbs a Helm install, upgrade, uninstall
// and drift repair need, plus what the operator itself needs (its custom
// resource with status and finalizers, Secrets for Helm's release storage,
// Events, leader-election Leases, and the TokenReviews and
// SubjectAccessReviews that serve its metrics to authorized scrapers only,
// package operator/metricsauth).
//
// The chart is rendered as the target cluster would render it: with the
// Kubernetes version's .Capabilities.KubeVersion and its served API set as
// .Capabilities.APIVersions (the cluster's own with Options.Config), so a
// switch on .Capabilities takes the branch that cluster takes. The APIs of
// CRDs the templates test for (monitoring.coreos.com/v1, keda.sh/v1alpha1)
// are present in the renders that explore gates: the kinds a cluster serving
// them would receive are granted, gated by "the cluster serves ...".
//
// Gates are read from the templates' parse trees (gates.go): every value an
// if, with or range tests where it decides which documents, apiVersions,
// kinds or Role rules are written (truth, comparisons, enums, emptiness,
// includes, ternary). A few renders vary them all (explore.go): one with
// every gate on, one per other choice; a render that fails sheds the gates
// of the failing template, or is bisected; values a template requires, or a
// fail's condition asks for, are made up (ExploredValue).
//
// Every apiVersion is checked against the target version: a removed API the
// default (or a sample's) values render is an error naming the file, the
// kind and the replacement; one only gates render is a warning naming the
// file, the gate and the fix; deprecated ones are warnings. So are chart
// roles Kubernetes would refuse (read leniently, never a reason to stop) and
// rules that make the operator cluster-admin in effect.
//
// Stage scaffold of chart -> scaffold -> bundle -> catalog -> olm/cluster
// -> doctor -> cmd: it may import earlier stages, the runtime and
// internal/, and must not import a later stage (bundle, scorecard, catalog,
// olm, cluster, apply, doctor, cmd/).
package rbac
