package chart

import "strings"

// OCIScheme prefixes a chart reference in an OCI registry, as in
// oci://registry.example.com/charts/webapp.
const OCIScheme = "oci://"

// IsOCI tells whether name is a chart reference in an OCI registry.
func IsOCI(name string) bool { return strings.HasPrefix(name, OCIScheme) }

// SplitOCIReference splits an oci:// reference (oci://HOST/PATH/NAME,
// optionally with :TAG) into the repository HOST/PATH/NAME and the tag,
// empty when there is none (a colon before the last slash belongs to the
// host's port).
func SplitOCIReference(name string) (repository, tag string) {
	ref := strings.TrimPrefix(name, OCIScheme)
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}
