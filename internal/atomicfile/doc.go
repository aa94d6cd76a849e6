// Package atomicfile writes files so that readers see the old content or the
// new, never a half-written file, whatever stops the writer.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package atomicfile
