// Package logtest collects a logr logger's lines, written from several
// goroutines, for tests that look for what was logged.
//
// A bottom helper: it imports nothing of chartpilot above internal/.
package logtest
