package extension

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// ErrNoWatchNamespace means the cluster's OLM v1 cannot install an
// operator for one namespace: its ClusterExtension has no spec.config.
var ErrNoWatchNamespace = errors.New("this cluster's OLM v1 installs operators for all namespaces only: its ClusterExtension has no spec.config (OLM v1 v1.4 or later, with the experimental CRDs, takes config.inline.watchNamespace when operator-controller runs with --feature-gates=" + SingleOwnNamespaceGate + "=true)")

// ErrInstallMode means the bundle's CSV does not support the install mode
// asked for.
var ErrInstallMode = errors.New("install mode not supported")

// WatchNamespaceNote says why an install watches its own namespace.
const WatchNamespaceNote = "the operator watches its own namespace (config.inline.watchNamespace): the bundle's CSV supports OwnNamespace, not AllNamespaces"

// chooseWatchNamespace settles the namespace the operator of bundle
// watches, from what its CSV's install modes support and what the cluster
// takes; the note says why when it chose one the user did not give.
func chooseWatchNamespace(opts InstallOptions, f Features, bundle *Bundle) (watch, note string, err error) {
	modes := bundle.InstallModes
	if len(modes) == 0 {
		return opts.WatchNamespace, "", nil // nothing to check against: the CSV's modes are unknown
	}
	mode := v1alpha1.InstallModeTypeAllNamespaces
	switch opts.WatchNamespace {
	case "":
	case opts.Namespace:
		mode = v1alpha1.InstallModeTypeOwnNamespace
	default:
		mode = v1alpha1.InstallModeTypeSingleNamespace
	}
	if modes[mode] {
		return opts.WatchNamespace, "", nil
	}
	if opts.WatchNamespace == "" && f.Config && modes[v1alpha1.InstallModeTypeOwnNamespace] {
		return opts.Namespace, WatchNamespaceNote, nil
	}
	fix := "install it with OLM v0"
	switch {
	case f.Config && modes[v1alpha1.InstallModeTypeSingleNamespace]:
		fix = "give a namespace to watch (--watch-namespace)"
	case f.Config && modes[v1alpha1.InstallModeTypeOwnNamespace]:
		fix = "watch the install namespace (--watch-namespace " + opts.Namespace + ")"
	case !f.Config && !modes[v1alpha1.InstallModeTypeAllNamespaces]:
		fix = ErrNoWatchNamespace.Error() + "; or add {type: AllNamespaces, supported: true} to the CSV's spec.installModes"
	}
	return "", "", fmt.Errorf("install: bundle %s: %w: %s (its CSV supports %s): %s",
		bundle.Name, ErrInstallMode, mode, supportedModes(modes), fix)
}

// supportedModes lists the install modes a CSV supports.
func supportedModes(modes v1alpha1.InstallModeSet) string {
	var out []string
	for m, ok := range modes {
		if ok {
			out = append(out, string(m))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
