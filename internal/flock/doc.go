// Package flock takes advisory file locks (flock(2)) that the kernel
// releases when the process dies, so no crash leaves a stale lock behind.
// The lock file itself stays: removing it would let two processes lock two
// different files.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package flock
