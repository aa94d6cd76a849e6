// Package crdschema builds the CustomResourceDefinition of a Helm operator's
// custom resource with a real openAPIV3Schema: `spec` from the chart's
// values.schema.json when it has one, otherwise inferred from values.yaml
// and the templates, and `status` for what the operator runtime writes.
//
// The inferred schema accepts what the chart accepts:
//   - non-empty defaults give types (whole numbers are integers); empty ones
//     ({}, [], null, "") prove nothing and accept any value;
//   - the templates (helpers and subcharts' included) are parsed with Helm's
//     function names, and every .Values path they read is kept: one values.yaml
//     does not declare accepts any value, with a warning naming the file and
//     the path; values handed whole to toYaml, tpl or include are free-form,
//     and ranged maps keep unknown keys (TemplateUsage, Widen);
//   - a value landing in a field the Kubernetes API reads as an integer or
//     a string (targetPort, minAvailable, maxUnavailable, maxSurge, a probe's
//     port, a port by name), or whose defaults hold both, is int-or-string;
//     a resource quantity (cpu, memory, requests, limits) any scalar; ""
//     read as a number stays open, with a warning (EmptyNumbers);
//   - a chart rendering values with tpl keeps unknown keys: the templates
//     written in the values may read any value; global keeps unknown keys
//     always (Helm hands it to every subchart, and charts put anything there);
//   - a string the templates only print as text (within a longer string, or
//     formatted with quote, printf...) is int-or-string: the integers users
//     write (tag: 15) print the same; one printed bare as a field's whole
//     value, or handed to a string function or eq, stays a string;
//   - values given besides values.yaml (--values, --set) are accepted
//     wherever the schema would refuse or prune them (Admit);
//   - in the CRD every field is nullable, a null being Helm's way to delete
//     a default (string enums become patterns, which the API server does not
//     check on null);
//   - dependencies' conditions and tags in Chart.yaml are booleans;
//   - descriptions come from the comment block directly above a key, without
//     commented-out YAML examples;
//   - defaults are never required, so a CR that plain Helm would accept is not
//     rejected.
//
// Stage chart of chart -> scaffold -> bundle -> catalog -> olm/cluster ->
// doctor -> cmd: it may import earlier stages, the runtime and internal/,
// and must not import a later stage (rbac, scaffold, bundle, scorecard,
// catalog, olm, cluster, apply, doctor, cmd/).
package crdschema
