package release

import (
	"fmt"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Client gives Helm actions for any namespace, sharing one discovery cache and
// one REST mapper: building them per reconcile would cost a discovery
// round-trip each time.
type Client struct {
	config    *rest.Config
	clientset kubernetes.Interface
	dynamic   dynamic.Interface
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.ResettableRESTMapper
	log       func(string, ...any)

	mu      sync.Mutex
	configs map[string]*action.Configuration
}

// NewClient returns a Client acting with cfg's identity. log receives Helm's
// debug lines; nil discards them.
func NewClient(cfg *rest.Config, log func(string, ...any)) (*Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	disc := memory.NewMemCacheClient(cs.Discovery())
	if log == nil {
		log = func(string, ...any) {}
	}
	return &Client{
		config:    cfg,
		clientset: cs,
		dynamic:   dyn,
		discovery: disc,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(disc),
		log:       log,
		configs:   map[string]*action.Configuration{},
	}, nil
}

// actionConfig returns the Helm configuration for releases in namespace, with
// release records in Secrets there.
func (c *Client) actionConfig(namespace string) *action.Configuration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg, ok := c.configs[namespace]; ok {
		return cfg
	}
	getter := &restClientGetter{client: c, namespace: namespace}
	kc := kube.New(getter)
	kc.Namespace = namespace
	kc.Log = c.log
	secrets := driver.NewSecrets(c.clientset.CoreV1().Secrets(namespace))
	secrets.Log = c.log
	store := storage.Init(secrets)
	cfg := &action.Configuration{
		RESTClientGetter: getter,
		Releases:         store,
		KubeClient:       kc,
		Log:              c.log,
	}
	c.configs[namespace] = cfg
	return cfg
}

// ResetMapper forgets discovered APIs, after a CRD appears for example.
func (c *Client) ResetMapper() {
	c.discovery.Invalidate()
	c.mapper.Reset()
}

// restClientGetter hands Helm the Client's shared clients.
type restClientGetter struct {
	client    *Client
	namespace string
}

var _ genericclioptions.RESTClientGetter = (*restClientGetter)(nil)

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.client.config), nil
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.client.discovery, nil
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.client.mapper, nil }

func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	cfg := clientcmdapi.NewConfig()
	return clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// RESTMapper is the client's shared, discovery-backed mapper.
func (c *Client) RESTMapper() meta.RESTMapper { return c.mapper }
