// Package fuzzseed seeds fuzz targets with the files a repository already
// has: test charts, golden configurations.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package fuzzseed
