package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/bundle/installer"
	"github.com/chartpilot/chartpilot/bundle/olmv1"
)

// bundleRBACOptions are the options of `bundle rbac`.
type bundleRBACOptions struct {
	streams genericiooptions.IOStreams
	installer.Options
	olmV1 bool
	// bundle is the bundle installed or upgraded to; from the bundles it
	// upgrades from (--upgrade-from).
	bundle string
	from   []string
	output *enumFlag
}

func newBundleRBACCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &bundleRBACOptions{streams: streams, output: newEnumFlag("yaml", "yaml", "json")}
	cmd := &cobra.Command{
		Use:   "rbac --olm-v1 [BUNDLE_DIR|BUNDLE_IMAGE]",
		Short: "Print the least RBAC OLM v1's installer ServiceAccount needs for a bundle",
		Long: `OLM v1 (operator-controller) installs a bundle with the identity of a
ServiceAccount its ClusterExtension names, and refuses to without one. This
prints that ServiceAccount and the ClusterRole, Role(s) and bindings it needs,
derived from the bundle alone (default ./bundle, or a bundle image), for
operator-controller ` + olmv1.OperatorControllerVersion + `: create on each kind of the bundle's
objects, get, patch and delete by name, list and watch (operator-controller
watches what it installed), update on its ClusterExtension's finalizers, and
the rules of the roles the bundle makes (the API server lets only who holds
them grant them); bind by name for a role the bundle binds without making.

The install namespace, the ClusterExtension's spec.namespace, is -n
(default: the CSV's suggested namespace, else PACKAGE-system).

For an upgrade, add the installed bundle with --upgrade-from: the installer
deletes what the new version drops. Pipe the output to kubectl create -f
before creating the ClusterExtension. A bundle operator-controller refuses
(see ` + "`chartpilot bundle validate --olm-v1`" + `) is an error.`,
		Example: `  chartpilot bundle rbac --olm-v1 ./bundle -n hello-system | kubectl create -f -
  chartpilot bundle rbac --olm-v1 quay.io/me/op-bundle:v0.2.0 --upgrade-from quay.io/me/op-bundle:v0.1.0`,
		Args: cobra.MaximumNArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.olmV1, "olm-v1", false, "the installer of OLM v1 (operator-controller "+olmv1.OperatorControllerVersion+"); required: OLM v0 installs with its own rights")
	fl.StringVarP(&o.Namespace, "namespace", "n", "", "the install namespace, the ClusterExtension's spec.namespace (default: the CSV's suggested namespace, else PACKAGE-system); no cluster is asked")
	fl.StringVar(&o.Extension, "extension", "", "the ClusterExtension's name (default: the package name)")
	fl.StringVar(&o.WatchNamespace, "watch-namespace", "", "the one namespace the operator watches (needs operator-controller's SingleOwnNamespaceInstallSupport gate; default all)")
	fl.StringVar(&o.ServiceAccount, "service-account", "", "the installer ServiceAccount's name (default: EXTENSION-installer)")
	fl.StringArrayVar(&o.from, "upgrade-from", nil, "a bundle (directory or image) upgraded from; repeatable")
	fl.VarP(o.output, "output", "o", "output format: yaml (for kubectl create -f) or json")
	return cmd
}

func (o *bundleRBACOptions) complete(cmd *cobra.Command, args []string) error {
	o.bundle = "bundle"
	if len(args) == 1 {
		o.bundle = args[0]
	}
	return nil
}

func (o *bundleRBACOptions) validate() error {
	if !o.olmV1 {
		return &ExitError{Code: 2, Err: errors.New("--olm-v1 is required: only OLM v1 installs with a ServiceAccount of yours (OLM v0 with its own rights)")}
	}
	return nil
}

func (o *bundleRBACOptions) run(ctx context.Context) error {
	var bundles []*olmv1.Bundle
	for _, src := range append([]string{o.bundle}, o.from...) {
		b, err := olmv1.Open(ctx, src)
		if err != nil {
			return err
		}
		bundles = append(bundles, b)
	}
	r, err := installer.Rules(o.Options, bundles...)
	if err != nil {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(o.streams.ErrOut, "warning: %s\n", w)
	}
	if o.output.String() == "json" {
		return printData(o.streams.Out, "json", r.Objects(), nil)
	}
	fmt.Fprintf(o.streams.Out, "# The installer ServiceAccount of OLM v1 (operator-controller %s) for %s: %d rules.\n",
		olmv1.OperatorControllerVersion, bundles[0].CSV.Name, r.Count())
	return r.WriteYAML(o.streams.Out)
}
