// Package golden compares generated file trees with golden copies kept
// under a test's testdata, and rewrites the copies on request (-update).
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package golden
