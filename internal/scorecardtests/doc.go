// Package scorecardtests names the scorecard's suites and built-in tests:
// the contract between the scorecard that runs them, the bundle whose
// capability level cites them, and the config.yaml entries that select them.
// It imports nothing of chartpilot.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package scorecardtests
