// Package e2e runs the Helm operator runtime against the local cluster (a
// real control plane with controllers and kwok nodes, without OLM) for what
// an API server alone cannot show: Deployments that become ready, and an API
// server that goes away and comes back. The tests share one cluster and one
// operator; benchmarks alone (-run '^$') start neither: each measure starts
// a cluster of its own.
//
// Its benchmarks measure the Helm operator runtime on the local cluster, side
// by side with helm-operator-plugins' helm-operator: time for CRs to reach
// Deployed, resident memory, and the CPU and API requests the operator spends
// once everything is deployed; and the floor, the time the same objects, a
// release record per CR and the Deployed condition take when one client
// creates them directly at the same concurrency. Run them with
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./operator/e2e/
//
// and set CHARTPILOT_PEER_HELM_OPERATOR to a helm-operator binary (built from
// peers/) to measure the peer in the same run; CHARTPILOT_BENCH_CRS
// chooses the CR counts (default 200,1000). chartpilot runs as the operator
// image runs it: cmd/chartpilot-operator, built with CGO_ENABLED=0.
// CHARTPILOT_BENCH_SSA measures chartpilot a second time with server-side
// apply (the watch's serverSideApply), and CHARTPILOT_BENCH_BASELINE an
// earlier chartpilot-operator binary (such as the last one on Helm 3) in the
// same run. CHARTPILOT_BENCH_HEALTH_DEADLINE shortens the watch's health
// deadline (default 5m), which each measure of chartpilot waits for before
// its idle minute.
//
// The floor is measured before and after each operator's measure, and the
// operator's time is given as a multiple of the mean of the two: the
// machines this runs on are shared, and the two floors say how much the
// load changed meanwhile. CHARTPILOT_BENCH_ROUNDS alternates the measures
// that many times; the median multiple counts. Each measure starts on a
// cluster that has finished deleting the last one's namespace and is quiet
// again (its garbage collector done with it), waits for Deployed by watching
// the CRs (no polling LIST), and logs the CPU the operator and each cluster
// component spent until all were Deployed, and the API server's requests per
// CR by verb and resource with the seconds it spent on them.
// CHARTPILOT_BENCH_DEPLOY_ONLY ends each measure there, with the memory as
// the last CR shows Deployed, without the idle minute.
//
// With CHARTPILOT_BENCH_PROFILES set to a directory, chartpilot serves Go's
// profiles: its CPU profile until all CRs are Deployed is written there in
// 5-second pieces (read them together: go tool pprof -top DIR/chartpilot-200-*.cpu.pb.gz),
// and its heap profile, sampled every 4 KiB allocated, at the end of each measure.
//
// Idle is free: in the minute measured once every workload is available,
// chartpilot may only renew its informers' watches (each every 5 to 10
// minutes). It counts its requests by verb (operator.RequestsMetric), and
// any other request fails the run, naming the verbs. Across CR counts
// (CHARTPILOT_BENCH_CRS=200,1000,5000), what each CR beyond the smaller
// count costs in memory and time is logged. The peer is only measured
// where it finishes in reasonable time; BenchmarkShards measures one
// operator against two shards (-bench Shards).
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package e2e
