package cli

import (
	"errors"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// errNoCluster: no kubeconfig names a cluster and this is not a pod.
var errNoCluster = errors.New("no cluster: no kubeconfig has a context (set --kubeconfig or KUBECONFIG) and this is not running in a pod")

// kubeConfig is the cluster the kubeconfig flags point at. Without a
// kubeconfig context outside a pod, client-go would fall back to an
// unauthenticated http://localhost:8080, whatever listens there (the local
// cluster's OLM catalog operator does): that is refused.
func kubeConfig(f *genericclioptions.ConfigFlags) (*rest.Config, error) {
	raw, err := f.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if len(raw.Contexts) == 0 {
		if _, err := rest.InClusterConfig(); err != nil {
			if *f.KubeConfig != "" {
				return nil, fmt.Errorf("--kubeconfig %s: no context in it", *f.KubeConfig)
			}
			return nil, errNoCluster
		}
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return cfg, nil
}
