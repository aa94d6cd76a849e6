package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/chartpilot/chartpilot/cmd/runcmd"
	"github.com/chartpilot/chartpilot/doctor"
	"github.com/chartpilot/chartpilot/olm"
)

func newDoctorCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	var opts doctor.Options
	output := newEnumFlag("text", "text", "json")
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Run the troubleshooting checklist of a Helm operator: CRD, Deployment, custom resources, RBAC, APIs, OLM",
		Long: `Checks, each with pass, warn or fail and a one-line fix:
  - the CRD of the kind is installed, Established and served by discovery;
  - the operator Deployment is Available and its pods Running and Ready;
  - each custom resource's last reconcile (Deployed, ReleaseFailed,
    Irreconcilable, Ready conditions);
  - RBAC: every permission the chart needs (derived from the charts of
    --watches-file) asked of the API server as the operator's ServiceAccount
    (SubjectAccessReview), naming the exact missing rule;
  - APIs the chart renders that the cluster's Kubernetes version removed or
    deprecated;
  - OLM: the OperatorGroup, CatalogSource connection, Subscription state,
    InstallPlan and CSV phases (with --package, or found from the CRD).
Exits non-zero when a check fails.`,
		Example: `  chartpilot doctor --package demo-operator -n demo --watches-file watches.yaml
  chartpilot doctor --kind Widget.demo.example.com -n demo --watches-file watches.yaml --service-account demo/demo-operator`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := runcmd.KubeConfig(configFlags)
			if err != nil {
				return fmt.Errorf("reaching the cluster: %w", err)
			}
			if configFlags.Namespace != nil && *configFlags.Namespace != "" {
				opts.Namespace = *configFlags.Namespace
			} else if opts.Package != "" {
				if opts.Namespace, err = namespaceOf(configFlags); err != nil {
					return err
				}
			}
			opts.Config = cfg
			rep, err := doctor.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if err := printData(streams.Out, output.String(), rep, func(w io.Writer) error {
				if err := olm.WriteFindings(w, rep.Checks); err != nil {
					return err
				}
				_, err := fmt.Fprintf(w, "%d passed, %d warnings, %d failed\n", rep.Count(doctor.Pass), rep.Count(doctor.Warn), rep.Count(doctor.Fail))
				return err
			}); err != nil {
				return err
			}
			if rep.Failed() {
				return fmt.Errorf("%d checks failed", rep.Count(doctor.Fail))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Kind, "kind", "", "the custom resource kind as KIND.GROUP, e.g. Widget.demo.example.com")
	fl.StringVar(&opts.Package, "package", "", "the OLM package installed in the namespace")
	fl.StringVar(&opts.WatchesFile, "watches-file", "", "the operator's watches.yaml: its charts give the permissions and APIs to check")
	fl.StringVar(&opts.ServiceAccount, "service-account", "", "the operator's ServiceAccount as NAMESPACE/NAME (default: the CSV's)")
	fl.StringSliceVar(&opts.WatchNamespaces, "watch-namespaces", nil, "namespaces the operator watches, where namespaced permissions are checked and custom resources looked for (default: the OperatorGroup's, else -n)")
	fl.StringVar(&opts.KubeVersion, "kube-version", "", "the Kubernetes version to check APIs against (default: the cluster's)")
	fl.VarP(output, "output", "o", "output format: text or json")
	return cmd
}
