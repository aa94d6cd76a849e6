package runcmd

import (
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// NewConfigFlags returns the kubectl conventions for reaching a cluster
// (--kubeconfig, --context, --namespace, --as, --as-group), bound to no
// flag set yet: each command that reaches a cluster adds them to its own
// flags with AddKubeFlags, so that no other command shows them.
func NewConfigFlags() *genericclioptions.ConfigFlags {
	kubeconfig, kubeContext, namespace, as := "", "", "", ""
	var asGroups []string
	return &genericclioptions.ConfigFlags{
		KubeConfig: &kubeconfig, Context: &kubeContext, Namespace: &namespace,
		Impersonate: &as, ImpersonateGroup: &asGroups,
	}
}

// NewContextFlags returns --kubeconfig and --context alone, for commands
// that may ask a cluster's discovery but act in no namespace.
func NewContextFlags() *genericclioptions.ConfigFlags {
	kubeconfig, kubeContext := "", ""
	return &genericclioptions.ConfigFlags{KubeConfig: &kubeconfig, Context: &kubeContext}
}

// AddKubeFlags adds f's flags to fs, a command's own flags (or a group's
// persistent flags when every command of the group reaches the cluster).
func AddKubeFlags(fs *pflag.FlagSet, f *genericclioptions.ConfigFlags) {
	f.AddFlags(fs)
}

// AddVerbosityFlag adds klog's -v, which the Kubernetes libraries log
// through.
func AddVerbosityFlag(fs *pflag.FlagSet) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	v := klogFlags.Lookup("v")
	fs.AddGoFlag(&flag.Flag{Name: v.Name, Usage: v.Usage + fmt.Sprintf(" (at most %d: above it client-go logs response bodies, Secrets included)", MaxVerbosity),
		Value: cappedVerbosity{Value: v.Value}, DefValue: v.DefValue})
}

// MaxVerbosity is the highest klog level chartpilot allows: from 8 on
// client-go logs request and response bodies, and a Helm operator's include
// its release Secrets, which must never reach a log.
const MaxVerbosity = 7

// cappedVerbosity is klog's -v refusing levels above MaxVerbosity.
type cappedVerbosity struct{ flag.Value }

func (cappedVerbosity) Type() string { return "int" }

func (c cappedVerbosity) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a number from 0 to %d", MaxVerbosity)
	}
	if n > MaxVerbosity {
		return fmt.Errorf("%d is above %d: from 8 on client-go logs response bodies, and a Helm operator's hold its release Secrets", n, MaxVerbosity)
	}
	return c.Value.Set(s)
}

// ErrNoCluster means no kubeconfig names a cluster and this is not a pod.
var ErrNoCluster = errors.New("no cluster: no kubeconfig has a context (set --kubeconfig or KUBECONFIG) and this is not running in a pod")

// KubeConfig is the cluster the kubeconfig flags point at. Without a
// kubeconfig context outside a pod, client-go would fall back to an
// unauthenticated http://localhost:8080, whatever listens there (the local
// cluster's OLM catalog operator does): that is refused.
func KubeConfig(f *genericclioptions.ConfigFlags) (*rest.Config, error) {
	raw, err := f.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if len(raw.Contexts) == 0 {
		if _, err := rest.InClusterConfig(); err != nil {
			if *f.KubeConfig != "" {
				return nil, fmt.Errorf("--kubeconfig %s: no context in it", *f.KubeConfig)
			}
			return nil, ErrNoCluster
		}
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cfg, nil
}
