// Package crddiff compares the CustomResourceDefinitions of two releases of
// an operator and lists every change that can break the CRs already on a
// cluster, with the rules OLM v1's CRD upgrade-safety preflight applies
// (operator-controller's crdupgradesafety, which runs sigs.k8s.io/crdify with
// the enum additions allowed and description changes ignored):
//
//   - the CRD's scope changed;
//   - a version in the old CRD's status.storedVersions is gone (for a CRD
//     read from a bundle, which has no status, its storage version);
//   - a field of a version kept in both is removed;
//   - in a version kept in both, a field's type changed, an enum was
//     narrowed or added where there was none, a field became required, a
//     default was added, changed or removed, a maximum, maxLength, maxItems
//     or maxProperties was lowered or added, a minimum, minLength, minItems
//     or minProperties was raised or added;
//   - any other change of a field (format, pattern, nullable, x-kubernetes-*
//     markers, CEL rules...), which OLM v1 cannot judge and so refuses;
//   - the same rules between the served versions of the new CRD, for the
//     differences the old CRD did not already have (skipped when the new CRD
//     converts through a webhook).
//
// New optional fields, new enum values and loosened bounds are safe and not
// reported. Each Change says where, which rule, why it breaks existing CRs
// and what to do instead.
//
// Stage chart of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (rbac, scaffold, bundle, scorecard,
// catalog, olm, cluster, apply, doctor, cmd/).
package crddiff
