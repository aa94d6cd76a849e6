// Package strictyaml reads the YAML files users write (watches.yaml, the
// scorecard's config.yaml) into Go types strictly: keys match the types'
// json names exactly, and unknown or duplicate keys are refused.
//
// sigs.k8s.io/yaml's UnmarshalStrict goes through encoding/json, which
// matches keys case-insensitively: `ChArt:` filled Chart, and a file that
// another tool reads case-exactly meant something else there.
//
// It sits below every other package: it imports nothing of chartpilot
// outside internal/.
package strictyaml
