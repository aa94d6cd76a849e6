// Package gunzip reads gzip data with a limit on what it expands to, so
// that a small object (a Secret of 1 MiB) cannot inflate to gigabytes in
// the process that reads it.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package gunzip
