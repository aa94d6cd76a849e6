package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/apply/kustomize"
	"github.com/chartpilot/chartpilot/cmd/runcmd"
)

// kustomizeFlags are the flags apply and delete share.
type kustomizeFlags struct {
	dir    string
	images []string
	dryRun bool
	output *enumFlag
}

func (f *kustomizeFlags) add(cmd *cobra.Command, withImages bool) {
	fl := cmd.Flags()
	fl.StringVarP(&f.dir, "kustomize", "k", "", "the directory of the kustomization to build (kustomize runs as a library)")
	if withImages {
		fl.StringArrayVar(&f.images, "image", nil, "use image `NAME=REF` for containers whose image is NAME, also where an images entry of the kustomizations renamed NAME (kustomize edit set image); repeatable")
	}
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the objects, in the order they would be processed, without reaching the cluster")
	f.output = newEnumFlag("yaml", "yaml", "json", "name")
	fl.VarP(f.output, "output", "o", "with --dry-run: yaml, json or name")
	_ = cmd.MarkFlagRequired("kustomize")
}

// build runs kustomize and, with --dry-run, prints the objects.
func (f *kustomizeFlags) build(out io.Writer, reverse bool) ([]*unstructured.Unstructured, error) {
	var images []kustomize.Image
	for _, s := range f.images {
		img, err := kustomize.ParseImage(s)
		if err != nil {
			return nil, fmt.Errorf("--image: %w", err)
		}
		images = append(images, img)
	}
	objs, err := kustomize.Build(f.dir, images)
	if err != nil {
		return nil, err
	}
	if f.dryRun {
		shown := objs
		if reverse {
			shown = make([]*unstructured.Unstructured, len(objs))
			for i, o := range objs {
				shown[len(objs)-1-i] = o
			}
		}
		return objs, printObjects(out, f.output.String(), shown)
	}
	return objs, nil
}

// printObjects writes objs as a YAML stream, a JSON v1 List, or kind/name lines.
func printObjects(w io.Writer, format string, objs []*unstructured.Unstructured) error {
	switch format {
	case "json":
		items := make([]map[string]any, len(objs))
		for i, o := range objs {
			items[i] = o.Object
		}
		data, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(data))
		return err
	case "name":
		for _, o := range objs {
			fmt.Fprintf(w, "%s/%s\n", o.GroupVersionKind().GroupKind().String(), o.GetName())
		}
		return nil
	default:
		for _, o := range objs {
			data, err := yaml.Marshal(o.Object)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "---\n%s", data)
		}
		return nil
	}
}

// applyOptions turns the kubectl flags into apply.Options.
func applyOptions(configFlags *genericclioptions.ConfigFlags, out io.Writer) (apply.Options, error) {
	cfg, err := runcmd.KubeConfig(configFlags)
	if err != nil {
		return apply.Options{}, fmt.Errorf("reaching the cluster: %w", err)
	}
	ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return apply.Options{}, fmt.Errorf("reaching the cluster: %w", err)
	}
	return apply.Options{Config: cfg, Namespace: ns, Out: out}, nil
}

// applyCmdOptions are apply's and delete's flags: delete deletes the
// objects apply applies.
type applyCmdOptions struct {
	kustomize   kustomizeFlags
	streams     genericiooptions.IOStreams
	configFlags *genericclioptions.ConfigFlags
	delete      bool
	wait        bool
	timeout     time.Duration
}

func newApplyCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &applyCmdOptions{streams: streams, configFlags: configFlags}
	cmd := &cobra.Command{
		Use:   "apply --kustomize DIR",
		Short: "Build a kustomization and apply it to the cluster with server-side apply (make install, make deploy)",
		Long: `apply builds the kustomization in DIR (kustomize as a library: no kustomize
binary) and applies its objects with server-side apply, field manager
"chartpilot", taking over conflicting fields as kubectl apply --server-side
--force-conflicts does. CRDs and Namespaces go first; CRDs are waited for until
Established and their kinds served by discovery before objects of their kinds
are applied.`,
		Example: `  chartpilot apply --kustomize config/crd
  chartpilot apply --kustomize config/default --image controller=example.com/op:v0.1.0
  chartpilot apply --kustomize config/default --dry-run -o yaml`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	o.kustomize.add(cmd, true)
	return cmd
}

func newDeleteCommand(streams genericiooptions.IOStreams, configFlags *genericclioptions.ConfigFlags) *cobra.Command {
	o := &applyCmdOptions{streams: streams, configFlags: configFlags, delete: true}
	cmd := &cobra.Command{
		Use:   "delete --kustomize DIR",
		Short: "Delete the objects of a kustomization from the cluster (make uninstall, make undeploy)",
		Long: `delete builds the kustomization in DIR and deletes its objects in the reverse
of the order apply creates them (custom resources before their CRDs, Namespaces
last). Each step waits until what it deleted is gone, so that the operator
still runs while its custom resources' finalizers uninstall their releases, and
a CRD is gone before the next make install. Objects already gone count as
deleted, so delete can be repeated.`,
		Example: `  chartpilot delete --kustomize config/default
  chartpilot delete --kustomize config/crd --timeout 5m`,
		Args: cobra.NoArgs,
		RunE: runOptions(o),
	}
	runcmd.AddKubeFlags(cmd.Flags(), configFlags)
	o.kustomize.add(cmd, false)
	cmd.Flags().BoolVar(&o.wait, "wait", true, "wait at each step until what was deleted is gone (finalizers done): custom resources, then the rest, then CRDs, then Namespaces")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long each step may wait with --wait")
	return cmd
}

// run builds the kustomization, then (unless --dry-run printed it)
// applies or deletes its objects.
func (o *applyCmdOptions) run(ctx context.Context) error {
	objs, err := o.kustomize.build(o.streams.Out, o.delete)
	if err != nil || o.kustomize.dryRun {
		return err
	}
	opts, err := applyOptions(o.configFlags, o.streams.Out)
	if err != nil {
		return err
	}
	if !o.delete {
		return apply.Apply(ctx, objs, opts)
	}
	opts.Wait, opts.Timeout = o.wait, o.timeout
	return apply.Delete(ctx, objs, opts)
}
