// Package storageversion migrates the custom resources of a CRD to its
// storage version, as kube-storage-version-migrator does, and then trims
// the CRD's status.storedVersions to that version alone.
//
// A CRD that gained a version and made it the storage one still lists the
// old version in status.storedVersions: objects written before the switch
// stay encoded in it in etcd until they are written again. A later release
// may drop the old version only once no object is stored in it (the API
// server could not read them; OLM v0 and v1 refuse such an upgrade while
// storedVersions holds it). Migrate writes every CR back unchanged (the API
// server encodes each write in the storage version), then sets
// storedVersions to the storage version.
//
// Only whoever sees every CR of the CRD in the cluster may trim: the
// operator does it at start-up when it watches all namespaces, and
// `chartpilot olm migrate` as the cluster admin otherwise.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ packages and internal/, never a build-time package.
package storageversion
