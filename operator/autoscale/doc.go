// Package autoscale lets a custom resource ask for horizontal scaling of its
// chart's workloads, and keeps the replica counts a HorizontalPodAutoscaler
// owns out of the operator's way.
//
// A CR asks with the reserved spec field `autoscaling` (Field), shaped as
// `helm create` shapes its values: enabled, minReplicas, maxReplicas,
// targetCPUUtilizationPercentage, targetMemoryUtilizationPercentage.
//   - When the chart's own values have that key (a `helm create` chart), the
//     field is the chart's: it reaches the chart as values and drives the
//     chart's own HPA; the operator adds nothing (ChartOwns).
//   - Otherwise it is the operator's: it is taken out of the values (Split)
//     and, when enabled, the post renderer adds an autoscaling/v2 HPA for each
//     Deployment and StatefulSet of the release (Render).
//
// Either way, a workload that an HPA of the release targets is rendered
// without spec.replicas: neither Helm's three-way merge on upgrade nor drift
// repair then writes the count the HPA set.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package autoscale
