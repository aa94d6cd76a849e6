// Package preflight checks, before an upgrade is published or approved,
// the custom resources already on a cluster against the CRDs of the new
// bundle: each CR is read as the cluster serves it today and put through
// what the API server will do with it once the new CRD is in place
// (apiextensions-apiserver's own pruning, defaulting and schema
// validation), so that every CR the new schema would reject, and every
// field it would drop, is named before OLM v0 refuses the InstallPlan or
// the data is lost. A version the new CRD drops while the cluster's CRD
// still lists it in status.storedVersions is named too.
//
// CEL validation rules (x-kubernetes-validations) are not evaluated.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package preflight
