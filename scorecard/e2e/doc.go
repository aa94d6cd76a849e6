// Package e2e runs the scorecard on the local cluster (kube-apiserver,
// controllers, scheduler and kwok, without OLM) against an operator
// scaffolded from a chart whose Deployment must become Ready: what envtest
// alone cannot show.
//
// Stage bundle of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (catalog, olm, cluster, apply, doctor,
// cmd/).
package e2e
