// Package apply applies objects to a cluster with server-side apply, or
// deletes them: what a project's `make install`, `deploy`, `uninstall` and
// `undeploy` run through `chartpilot apply|delete --kustomize`, on the
// objects package apply/kustomize builds.
//
// Objects are applied in dependency order (CRDs and Namespaces first, then
// RBAC, configuration, workloads), CRDs are waited for until Established and
// served by discovery (package internal/crdready) before objects of their
// kinds are applied, and deletion runs in the
// reverse order, treating objects already gone as deleted.
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package apply
