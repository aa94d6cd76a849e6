// Package crdready waits until the API server serves the kinds of custom
// resource definitions, for everything in chartpilot that installs CRDs and
// then uses their kinds (apply, the scorecard, the local cluster's bootstrap)
// or starts on kinds someone else installed (the operator, doctor).
//
// A CRD becomes Established a moment before discovery lists its kind, and
// REST mappers (client-go's, controller-runtime's, Helm's) start from
// discovery: an object applied in between fails with `no matches for kind`.
// A kind is served here when both places a mapper reads list it:
//
//   - the aggregated discovery document (/api and /apis), and
//   - the group-version's resource list (/apis/GROUP/VERSION).
//
// Wait waits for CRDs by name: Established, then each served version's kind
// in discovery. WaitKinds waits for kinds in discovery only, for callers
// that may not read CRDs (an operator running as its ServiceAccount). Both
// are bounded and, when they give up, name each CRD or kind and what was
// last seen of it. Observe looks once, for checks that report rather than
// wait.
//
// The package depends on client-go and the apiextensions types only, so that
// the runtime (operator) and the build-time packages can both use it.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package crdready
