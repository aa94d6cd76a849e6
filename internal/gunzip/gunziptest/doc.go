// Package gunziptest makes gzip data for tests of readers that limit it:
// gzip bombs, small compressed and huge expanded.
//
// A bottom helper for tests only: it imports nothing of chartpilot.
package gunziptest
