// Package rbac derives least-privilege RBAC for a Helm operator from the chart
// it manages: it renders the chart (default values, the samples' values and
// with value gates turned on), scans its templates for kinds that only some
// values create, resolves every kind to its resource and scope, and grants
// exactly the verbs a Helm install, upgrade, uninstall and drift repair need,
// plus what the operator itself needs (its custom resource with status and
// finalizers, Secrets for Helm's release storage, Events, leader-election
// Leases).
//
// It also checks every rendered apiVersion against a target Kubernetes version:
// removed APIs are errors naming the file, the kind and the replacement,
// deprecated ones warnings.
package rbac
