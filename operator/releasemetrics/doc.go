// Package releasemetrics exports, per custom resource, how its release is
// doing: reconciles and their duration, Helm actions, the revision deployed,
// whether it is ready, drifted or failed, when it last reconciled
// successfully, drift repairs and objects not healthy.
//
// The labels are the CR's kind, namespace and name, never an object of the
// release, so the series grow with the CRs and nothing else; a CR's series
// are deleted when it is.
//
// A CR's series are about 2 KiB of a scrape: 5000 CRs would make each
// scrape some 10 MiB. So the per-release series are limited by default
// (Options.SeriesLimit, DefaultSeriesLimit CRs): above the limit, a scrape
// holds those of the CRs that need attention (failed, not ready, drifted,
// repair suspended), which the scaffolded alerts fire on, up to the limit,
// and the series per kind (KindNames), which count every CR, always. A
// scrape of 5000 CRs is then about 11 KiB when they are healthy and 0.7 MiB
// when every one fails (BenchmarkScrape). A negative limit exports every
// CR's series.
//
// The metric names are a contract with the alerts
// and dashboard that `chartpilot init` scaffolds and the scorecard checks:
// they import them from here.
//
// Part of the runtime, which the operator image carries: it imports only
// operator/ and internal/, never a build-time package (chart, scaffold,
// bundle, catalog, olm, cluster, doctor, cmd and their stages).
package releasemetrics
