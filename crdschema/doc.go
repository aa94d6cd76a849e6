// Package crdschema builds the CustomResourceDefinition of a Helm operator's
// custom resource with a real openAPIV3Schema: `spec` from the chart's
// values.schema.json when it has one, otherwise inferred from values.yaml
// (types, nested objects, arrays, descriptions from its comments), and
// `status` for what the operator runtime writes.
//
// Inference is permissive where values.yaml says nothing: empty maps and
// lists, nulls and values templates pass through toYaml are free-form
// (x-kubernetes-preserve-unknown-fields), numbers are `number` (int or
// float), and fields values.yaml defaults are never required, so a CR that
// plain Helm would accept is not rejected.
package crdschema
