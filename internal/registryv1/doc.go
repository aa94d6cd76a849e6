// Package registryv1 names the parts of OLM's registry+v1 bundle format that
// chartpilot writes and reads: the annotations of metadata/annotations.yaml
// (also the bundle image's labels), their media types, and the directories.
// bundle writes them, catalog and scorecard read them; each is defined here
// once.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package registryv1
