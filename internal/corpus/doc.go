// Package corpus finds the corpus of real-world charts tests run over
// (issue 25): ../shared/charts beside the repository, or $CHARTPILOT_CORPUS.
// Without it a test is skipped, unless CI=true, where it fails: the
// corpus tests must not pass by having nothing to check.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package corpus
