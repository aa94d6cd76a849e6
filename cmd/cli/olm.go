package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/olm"
	"github.com/chartpilot/chartpilot/olm/extension"
	"github.com/chartpilot/chartpilot/olm/preflight"
)

func newOLMCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "olm",
		Short: "Install an operator through OLM from a catalog, see where an install stands, remove it",
		Long: `subscribe creates the CatalogSource, an OperatorGroup fitting the install mode
and the Subscription (server-side apply: running it again changes nothing);
status walks the chain OLM follows (CatalogSource connection, Subscription,
InstallPlan, ClusterServiceVersion) and says where and why it is stuck;
unsubscribe removes the operator, and its custom resources and CRDs when asked.
Namespaces come from -n or the kubeconfig's context.`,
		Example: `  chartpilot olm subscribe my-operator -n demo --catalog-address 127.0.0.1:50051 --wait
  chartpilot olm status my-operator -n demo
  chartpilot olm unsubscribe my-operator -n demo --delete-crds --yes`,
	}
	// Every olm command reaches the cluster.
	runcmd.AddKubeFlags(cmd.PersistentFlags(), configFlags)
	cmd.AddCommand(
		newOLMSubscribeCommand(streams, configFlags),
		newOLMStatusCommand(streams, configFlags),
		newOLMUnsubscribeCommand(streams, configFlags),
		newOLMPreflightCommand(streams, configFlags),
		newOLMMigrateCommand(streams, configFlags),
		newOLMv1Command(streams, configFlags),
	)
	return cmd
}

// clusterClient returns a client that knows OLM's types, and the namespace
// of -n or the kubeconfig's context.
func clusterClient(configFlags *genericclioptions.ConfigFlags) (client.Client, string, error) {
	ns, err := namespaceOf(configFlags)
	if err != nil {
		return nil, "", err
	}
	cfg, err := runcmd.KubeConfig(configFlags)
	if err != nil {
		return nil, "", fmt.Errorf("reaching the cluster: %w", err)
	}
	c, err := olm.NewClient(cfg)
	return c, ns, err
}

func namespaceOf(configFlags *genericclioptions.ConfigFlags) (string, error) {
	if configFlags.Namespace != nil && *configFlags.Namespace != "" {
		return *configFlags.Namespace, nil
	}
	ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("finding the namespace (set -n): %w", err)
	}
	return ns, nil
}

// subscribeOptions are olm subscribe's flags and arguments.
type subscribeOptions struct {
	olm.SubscribeOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	approval    *enumFlag
	mode        *enumFlag
	output      *enumFlag
	dryRun      bool
	wait        bool
	timeout     time.Duration
}

func newOLMSubscribeCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &subscribeOptions{
		streams:     streams,
		configFlags: configFlags,
		approval:    newEnumFlag(string(v1alpha1.ApprovalAutomatic), string(v1alpha1.ApprovalAutomatic), string(v1alpha1.ApprovalManual)),
		mode:        newEnumFlag("", string(v1alpha1.InstallModeTypeOwnNamespace), string(v1alpha1.InstallModeTypeSingleNamespace), string(v1alpha1.InstallModeTypeAllNamespaces)),
		output:      outputFlag(),
	}
	cmd := &cobra.Command{
		Use:   "subscribe PACKAGE",
		Short: "Create the CatalogSource, OperatorGroup and Subscription that install PACKAGE (or print them with --dry-run)",
		Long: `Creates, with server-side apply, a grpc CatalogSource for the catalog (an
address such as chartpilot catalog serve's, or a catalog image), an
OperatorGroup fitting the install mode (the namespace's own is reused when it
fits; two OperatorGroups in a namespace are refused, since OLM then installs
nothing), and the Subscription.

Without --install-mode: the mode of the namespace's OperatorGroup if it has
one, else OwnNamespace if the CSV supports it (least privilege: namespaced
RBAC), else AllNamespaces. The CSV's install modes are read from the catalog
when --catalog-address can be reached; otherwise OwnNamespace.

--dry-run prints the objects without reaching the cluster.`,
		Example: `  chartpilot olm subscribe demo-operator -n demo --catalog-address 127.0.0.1:50051 --wait
  chartpilot olm subscribe demo-operator -n demo --catalog-address 127.0.0.1:50051 --dry-run -o yaml > subscription.yaml
  chartpilot olm subscribe demo-operator -n demo --catalog-image quay.io/me/demo-catalog:latest --channel stable --approval Manual`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.CatalogAddress, "catalog-address", "", "host:port of a registry server, e.g. chartpilot catalog serve's")
	fl.StringVar(&o.CatalogImage, "catalog-image", "", "a catalog image OLM runs a registry pod for")
	fl.StringVar(&o.CatalogSourceName, "catalog-source", "", "the CatalogSource's name (default PACKAGE-catalog)")
	fl.StringVar(&o.SubscriptionName, "subscription-name", "", "the Subscription's name (default: the existing Subscription to PACKAGE, else PACKAGE)")
	fl.StringVar(&o.Channel, "channel", "", "the channel to follow (default: the package's default channel)")
	fl.Var(o.approval, "approval", "InstallPlan approval: Automatic or Manual")
	fl.StringVar(&o.StartingCSV, "starting-csv", "", "install this CSV first instead of the channel head")
	fl.Var(o.mode, "install-mode", "OwnNamespace, SingleNamespace or AllNamespaces (default: see above)")
	fl.StringVar(&o.TargetNamespace, "target-namespace", "", "the namespace the operator watches in SingleNamespace mode")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the objects instead of creating them (the cluster is not contacted)")
	fl.BoolVar(&o.wait, "wait", false, "wait until the CSV is Succeeded, printing progress")
	fl.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml (with --dry-run: the objects)")
	cmd.MarkFlagsMutuallyExclusive("catalog-address", "catalog-image")
	cmd.MarkFlagsOneRequired("catalog-address", "catalog-image")
	return cmd
}

func (o *subscribeOptions) complete(_ *cobra.Command, args []string) error {
	ns, err := namespaceOf(o.configFlags)
	if err != nil {
		return err
	}
	o.Package, o.Namespace = args[0], ns
	o.Approval = v1alpha1.Approval(o.approval.String())
	o.InstallMode = v1alpha1.InstallModeType(o.mode.String())
	return nil
}

func (o *subscribeOptions) validate() error {
	if o.dryRun && o.wait {
		return errors.New("--wait waits for the install; it does not go with --dry-run")
	}
	return nil
}

func (o *subscribeOptions) run(ctx context.Context) error {
	if o.InstallMode == "" {
		if info, err := olm.LookupSubscribed(ctx, o.SubscribeOptions); err != nil {
			fmt.Fprintf(o.streams.ErrOut, "note: install modes unknown, the catalog did not answer: %v\n", err)
		} else {
			o.SupportedModes = info.InstallModes
		}
	}
	if o.dryRun {
		return printPlan(o.streams.Out, o.output.String(), o.SubscribeOptions)
	}
	c, _, err := clusterClient(o.configFlags)
	if err != nil {
		return err
	}
	res, err := olm.Subscribe(ctx, c, o.SubscribeOptions)
	if err != nil {
		return err
	}
	if err := printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, obj := range res.Objects {
			fmt.Fprintln(w, obj)
		}
		_, err := fmt.Fprintf(w, "install mode %s (%s)\n", res.InstallMode, res.InstallModeReason)
		return err
	}); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	return o.waitInstalled(ctx, c)
}

// waitInstalled waits for the CSV to succeed, printing progress (text
// output), or says how to approve a Manual InstallPlan.
func (o *subscribeOptions) waitInstalled(ctx context.Context, c client.Client) error {
	text, out, ns := o.output.String() == "text", o.streams.Out, o.Namespace
	cfg, err := runcmd.KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	began := time.Now()
	r, err := olm.Wait(ctx, c, o.Package, ns, olm.WaitOptions{Timeout: o.timeout, Catalog: cfg, Progress: func(r *olm.Report) {
		if text {
			fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(began).Seconds(), r.Summary())
		}
	}})
	if errors.Is(err, olm.ErrApprovalRequired) {
		fmt.Fprintf(out, "%s; approve it with\n  kubectl -n %s patch installplan %s --type merge -p '{\"spec\":{\"approved\":true}}'\n",
			err, ns, r.InstallPlan.Name)
		return nil
	}
	if err != nil {
		return err
	}
	if text {
		_, err = fmt.Fprintf(out, "installed %s in %s (%.1fs)\n", r.CSV.Name, ns, time.Since(began).Seconds())
	}
	return err
}

// printPlan prints the objects Subscribe would apply: YAML documents (text
// and yaml) or a JSON List.
func printPlan(w io.Writer, format string, opts olm.SubscribeOptions) error {
	plan, err := olm.NewPlan(opts, nil)
	if err != nil {
		return err
	}
	objs, err := plan.Objects()
	if err != nil {
		return err
	}
	if format == "json" {
		items := make([]any, 0, len(objs))
		for _, o := range objs {
			items = append(items, o.Object)
		}
		return printData(w, "json", map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil)
	}
	fmt.Fprintf(w, "# install mode %s: %s\n", plan.InstallMode, plan.InstallModeReason)
	docs := make([]string, 0, len(objs))
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		docs = append(docs, string(data))
	}
	_, err = fmt.Fprint(w, "---\n"+strings.Join(docs, "---\n"))
	return err
}

// olmStatusOptions are olm status's flags and arguments.
type olmStatusOptions struct {
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
	pkg         string
}

func newOLMStatusCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &olmStatusOptions{streams: streams, configFlags: configFlags, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "status PACKAGE",
		Short: "Show the CatalogSource connection, Subscription, InstallPlan and CSV of PACKAGE, and why an install is stuck",
		Long: `Reads the Subscription whose spec.name is PACKAGE in the namespace and the
objects OLM made for it, then checks each step: the namespace's OperatorGroup,
the CatalogSource's connection state, the Subscription's state and conditions
(ResolutionFailed with OLM's message), the InstallPlan's phase (approval,
failure) and the CSV's phase and reason (RequirementsNotMet with the missing
requirement). Until the CSV is Succeeded, it also asks the CatalogSource's
registry which packages it serves (through a port forward to its pod), to
name a catalog that serves nothing or not PACKAGE. Exits non-zero unless the
CSV is Succeeded.`,
		Example: `  chartpilot olm status my-operator -n demo
  chartpilot olm status my-operator -n demo -o json`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *olmStatusOptions) complete(_ *cobra.Command, args []string) error {
	o.pkg = args[0]
	return nil
}

func (o *olmStatusOptions) run(ctx context.Context) error {
	c, ns, err := clusterClient(o.configFlags)
	if err != nil {
		return err
	}
	obs, err := olm.Observe(ctx, c, o.pkg, ns)
	if meta.IsNoMatchError(err) || err == nil && obs.Subscription == nil {
		// OLM v1 may install the package instead.
		ext, f, ferr := extension.InsteadOfSubscription(ctx, c, o.pkg, ns)
		if ferr != nil {
			return ferr
		}
		if ext != nil {
			r := &olm.Report{Package: o.pkg, Namespace: ns, Findings: []olm.Finding{f}}
			if err := printData(o.streams.Out, o.output.String(), r, r.WriteText); err != nil {
				return err
			}
			return fmt.Errorf("package %s is installed by OLM v1, not by a Subscription in %s: see chartpilot olm v1 status %s", o.pkg, ns, ext.Name)
		}
	}
	if err != nil {
		return err
	}
	if !obs.Installed() {
		cfg, err := runcmd.KubeConfig(o.configFlags)
		if err != nil {
			return fmt.Errorf("reaching the cluster: %w", err)
		}
		olm.ObserveCatalog(ctx, cfg, obs)
	}
	r := obs.Report()
	if err := printData(o.streams.Out, o.output.String(), r, r.WriteText); err != nil {
		return err
	}
	if !r.Installed {
		return fmt.Errorf("package %s is not installed in %s", o.pkg, ns)
	}
	return nil
}

// olmUnsubscribeOptions are olm unsubscribe's flags and arguments.
type olmUnsubscribeOptions struct {
	olm.UnsubscribeOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
	yes         bool
}

func newOLMUnsubscribeCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &olmUnsubscribeOptions{streams: streams, configFlags: configFlags, output: outputFlag()}
	opts := &o.UnsubscribeOptions
	cmd := &cobra.Command{
		Use:   "unsubscribe PACKAGE",
		Short: "Remove the operator of PACKAGE: Subscription, CSV, InstallPlans; custom resources and CRDs when asked",
		Long: `Deletes the Subscription, the CSVs it installed (OLM then removes the
operator's Deployment, ServiceAccounts and RBAC), their InstallPlans, and the
CatalogSource and OperatorGroup that subscribe created, unless something else
uses them.

--delete-crs deletes every custom resource of the operator's CRDs, in all
namespaces, first, while the operator still runs its finalizers (a Helm
operator uninstalls each release). If the operator is gone, they wait
forever: --force-remove-finalizers drops the finalizers after --timeout,
leaving the release's objects. --delete-crds also deletes the CRDs. Both
destroy data and need --yes.

Each CSV is waited for until OLM's olm operator has run its finalizer
(operators.coreos.com/csv-cleanup: it deletes the CSV's ClusterRoles and
ClusterRoleBindings). OLM can leave that finalizer on a CSV whose cleanup it
finished, when its last update failed; unsubscribe then updates the CSV so
that OLM looks at it again. A CSV still there after --timeout is named with
what is left of it; run again, unsubscribe finds it without the
Subscription, and --force-remove-finalizers removes OLM's finalizer when
nothing is left for it to clean up.`,
		Example: `  chartpilot olm unsubscribe my-operator -n demo
  chartpilot olm unsubscribe my-operator -n demo --delete-crds --yes --timeout 5m`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DeleteCRs, "delete-crs", false, "delete the custom resources of the operator's CRDs (all namespaces) first")
	fl.BoolVar(&opts.DeleteCRDs, "delete-crds", false, "delete the operator's CRDs too (implies --delete-crs)")
	fl.BoolVar(&opts.ForceRemoveFinalizers, "force-remove-finalizers", false, "drop the finalizers of custom resources still there after --timeout, and OLM's of a CSV it has cleaned up")
	fl.BoolVar(&o.yes, "yes", false, "confirm --delete-crs / --delete-crds")
	fl.DurationVar(&opts.Timeout, "timeout", 2*time.Minute, "how long to wait for each deletion")
	fl.VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *olmUnsubscribeOptions) complete(_ *cobra.Command, args []string) error {
	o.Package = args[0]
	if o.output.String() == "text" {
		o.Out = o.streams.Out
	}
	return nil
}

func (o *olmUnsubscribeOptions) validate() error {
	if (o.DeleteCRs || o.DeleteCRDs) && !o.yes {
		return errors.New("--delete-crs and --delete-crds delete every custom resource of the operator's kinds in all namespaces: add --yes to confirm")
	}
	return nil
}

func (o *olmUnsubscribeOptions) run(ctx context.Context) error {
	c, ns, err := clusterClient(o.configFlags)
	if err != nil {
		return err
	}
	o.Namespace = ns
	res, err := olm.Unsubscribe(ctx, c, o.UnsubscribeOptions)
	if err != nil {
		return err
	}
	return printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, n := range res.Notes {
			fmt.Fprintln(w, "note:", n)
		}
		_, err := fmt.Fprintf(w, "unsubscribed %s in %s\n", o.Package, ns)
		return err
	})
}

// olmPreflightOptions are olm preflight's flags and arguments.
type olmPreflightOptions struct {
	src         preflight.Source
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
}

func newOLMPreflightCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &olmPreflightOptions{streams: streams, configFlags: configFlags, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "preflight BUNDLE_DIR|BUNDLE_IMAGE|CATALOG_DIR|CATALOG_IMAGE",
		Short: "List the CRs on the cluster that the CRDs of a new bundle would reject or prune, before upgrading",
		Long: `Reads the CRDs of the new bundle (a bundle directory or image; or, with
--package, the head of --channel in a catalog directory or image), and every
CR the cluster holds of each CRD it already has. Each CR is put through what
the API server will do with it under the new CRD (pruning, defaults, schema
validation, with apiextensions-apiserver's own code) in each version it is
served in: every CR the new schema would reject, and every field it would
drop, is listed with the field and why. Run it before publishing an upgrade,
or before approving a Manual InstallPlan. Exits non-zero when a CR would be
rejected or pruned. CEL rules (x-kubernetes-validations) are not evaluated.`,
		Example: `  chartpilot olm preflight ./bundle
  chartpilot olm preflight quay.io/me/op-bundle:v0.2.0
  chartpilot olm preflight ./catalog --package my-operator --channel stable`,
		Args: cobra.ExactArgs(1),
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&o.src.Package, "package", "", "the package, when the argument is a catalog")
	cmd.Flags().StringVar(&o.src.Channel, "channel", "", "the catalog channel whose head is checked (default: the package's default channel)")
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *olmPreflightOptions) complete(_ *cobra.Command, args []string) error {
	o.src.Ref = args[0]
	return nil
}

func (o *olmPreflightOptions) run(ctx context.Context) error {
	crds, err := preflight.LoadCRDs(ctx, o.src)
	if err != nil {
		return err
	}
	cfg, err := runcmd.KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	rep, err := preflight.Check(ctx, cfg, crds)
	if err != nil {
		return err
	}
	if err := printData(o.streams.Out, o.output.String(), rep, rep.WriteText); err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("%d problem(s): the new CRDs would reject or prune existing CRs", len(rep.Problems))
	}
	return nil
}

// olmMigrateOptions are olm migrate's flags and arguments.
type olmMigrateOptions struct {
	olm.MigrateOptions
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	output      *enumFlag
}

func newOLMMigrateCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &olmMigrateOptions{streams: streams, configFlags: configFlags, output: outputFlag()}
	cmd := &cobra.Command{
		Use:   "migrate [CRD...]",
		Short: "Rewrite every CR of CRDs in their storage version and trim status.storedVersions, so that a later release may drop old versions",
		Long: `After a release adds an API version as the storage version (chartpilot create
api --version), the CRs written before stay stored in the old version, which
the CRD's status.storedVersions keeps listing: a release that drops it is
refused (OLM checks it) until no CR is stored in it. migrate writes every CR of
each CRD back unchanged, in all namespaces (the API server encodes each write
in the storage version), then sets status.storedVersions to the storage
version alone, as kube-storage-version-migrator does.

An operator that watches all namespaces does this at its start; one that
watches some namespaces cannot see every CR, so run migrate as the cluster
admin. The CRDs are named, or those the installed CSV of --package owns (in
-n's namespace). A CR the API server refuses to write is named, and its CRD's
storedVersions are then kept.`,
		Example: `  chartpilot olm migrate --package my-operator -n operators
  chartpilot olm migrate widgets.example.com --dry-run`,
		RunE: runOptions(o),
	}
	cmd.Flags().StringVar(&o.Package, "package", "", "migrate the CRDs the installed CSV of this package owns (namespace: -n)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "count the CRs to rewrite and write nothing")
	cmd.Flags().VarP(o.output, "output", "o", "output format: text, json or yaml")
	return cmd
}

func (o *olmMigrateOptions) complete(_ *cobra.Command, args []string) error {
	o.CRDs = args
	return nil
}

func (o *olmMigrateOptions) run(ctx context.Context) error {
	cfg, err := runcmd.KubeConfig(o.configFlags)
	if err != nil {
		return fmt.Errorf("reaching the cluster: %w", err)
	}
	c, ns, err := clusterClient(o.configFlags)
	if err != nil {
		return err
	}
	o.Namespace, o.Out = ns, o.streams.ErrOut
	res, err := olm.MigrateStorage(ctx, c, cfg, o.MigrateOptions)
	if perr := printData(o.streams.Out, o.output.String(), res, func(w io.Writer) error {
		for _, r := range res {
			if _, err := fmt.Fprintln(w, r); err != nil {
				return err
			}
		}
		return nil
	}); perr != nil {
		return perr
	}
	return err
}
