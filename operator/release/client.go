package release

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"helm.sh/helm/v4/pkg/action"
	helmcommon "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
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
	// logger receives Helm's lines (see helmVerbosity); log is this
	// package's own debug lines, at V(2).
	logger logr.Logger
	log    func(string, ...any)
	reader client.Reader
	// pods: see WithPodReader.
	pods client.Reader
	// records and recordLabels: see WithRecordIndex.
	records      client.Reader
	recordLabels map[string]string
	cache        recordCache

	mu      sync.Mutex
	configs map[string]*action.Configuration
	drivers map[string]*secretsDriver
	enc     encoder
	// caps are the cluster's capabilities shared by every namespace's
	// configuration: Helm would otherwise invalidate the discovery cache
	// and rediscover the API for each namespace's first action.
	caps *helmcommon.Capabilities

	builtMu sync.Mutex
	built   map[types.NamespacedName]builtManifest
	// created: the versions of the objects Helm created, until a
	// comparison takes them as verified.
	created createdLog
	// now is the clock of health deadlines; nil is time.Now (tests set it).
	now func() time.Time
	// resources are the dynamic clients of the releases' objects, by
	// resource and namespace (see resource).
	resources sync.Map
}

func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithLogger sends Helm's log lines, and the client's own, to log.
func WithLogger(log logr.Logger) ClientOption {
	return func(c *Client) {
		c.logger = log
		c.log = func(format string, args ...any) { log.V(2).Info(fmt.Sprintf(format, args...)) }
	}
}

// WithReader reads the release's objects, for drift and readiness, through r
// (an informer cache) instead of the API server, so that a reconcile of a
// release in sync costs no request per object. An object the reader does not
// have is confirmed with the API server before it counts as deleted.
func WithReader(r client.Reader) ClientOption { return func(c *Client) { c.reader = r } }

// WithPodReader reads the pods of a release's workloads that are not
// healthy through r (an informer cache of views of the pods the release's
// workloads made, see ViewTransform; pods are listed as unstructured), to
// say why: CrashLoopBackOff, ImagePullBackOff... Without it, the health of a
// workload is what its own status says.
//
// r's cache must index pods with IndexPods.
func WithPodReader(r client.Reader) ClientOption { return func(c *Client) { c.pods = r } }

// NewClient returns a Client acting with cfg's identity.
func NewClient(cfg *rest.Config, opts ...ClientOption) (*Client, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	disc := memory.NewMemCacheClient(cs.Discovery())
	c := &Client{
		config:    cfg,
		clientset: cs,
		dynamic:   dyn,
		discovery: disc,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(disc),
		logger:    logr.Discard(),
		log:       func(string, ...any) {},
		configs:   map[string]*action.Configuration{},
		drivers:   map[string]*secretsDriver{},
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
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
	helmLog := newLogHandler(c.logger)
	kc := kube.New(getter)
	kc.Namespace = namespace
	kc.SetLogger(helmLog)
	d := newSecretsDriver(c.clientset.CoreV1().Secrets(namespace), &c.enc, c.log, c.recordLabels)
	c.drivers[namespace] = d
	store := storage.Init(d)
	store.SetLogger(helmLog)
	cfg := &action.Configuration{
		RESTClientGetter: getter,
		Releases:         store,
		KubeClient:       kubeClient{Client: kc, created: &c.created},
		Capabilities:     c.capabilities(),
	}
	cfg.SetLogger(helmLog)
	c.configs[namespace] = cfg
	return cfg
}

// driver returns the storage driver of namespace's releases.
func (c *Client) driver(namespace string) *secretsDriver {
	c.actionConfig(namespace)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drivers[namespace]
}

// capabilities returns the cluster's capabilities as Helm computes them, or
// nil to let Helm compute them when discovery fails. Call with c.mu held.
func (c *Client) capabilities() *helmcommon.Capabilities {
	if c.caps != nil {
		return c.caps
	}
	kubeVersion, err := c.discovery.ServerVersion()
	if err != nil {
		return nil
	}
	apiVersions, err := action.GetVersionSet(c.discovery)
	if err != nil {
		return nil
	}
	c.caps = &helmcommon.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: helmcommon.KubeVersion{Version: kubeVersion.GitVersion, Major: kubeVersion.Major, Minor: kubeVersion.Minor},
		HelmVersion: helmcommon.DefaultCapabilities.HelmVersion,
	}
	return c.caps
}

// ResetMapper forgets discovered APIs, after a CRD appears for example.
func (c *Client) ResetMapper() {
	c.mu.Lock()
	c.caps = nil // for namespaces seen from now on; Helm keeps a configuration's
	c.mu.Unlock()
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

// kubeClient is Helm's client without its reachability probe, a GET of the
// server's version before every action: the operator's watches already
// depend on the API server, and an action's first request fails with a
// clear error when it does not answer. It notes the version of each object
// it creates, which is as the manifest says: the next comparison need not
// read it again (see createdLog).
type kubeClient struct {
	*kube.Client
	created *createdLog
}

func (kubeClient) IsReachable() error { return nil }

func (k kubeClient) Create(resources kube.ResourceList, opts ...kube.ClientCreateOption) (*kube.Result, error) {
	res, err := k.Client.Create(resources, opts...)
	k.created.add(resources)
	return res, err
}

func (k kubeClient) Update(original, target kube.ResourceList, opts ...kube.ClientUpdateOption) (*kube.Result, error) {
	res, err := k.Client.Update(original, target, opts...)
	if res != nil {
		k.created.add(res.Created)
	}
	return res, err
}

// record reads one revision of a release, whole, from Helm's storage.
func (c *Client) record(namespace, name string, version int) (*helmrelease.Release, error) {
	r, err := c.actionConfig(namespace).Releases.Get(name, version)
	if err != nil {
		return nil, err
	}
	return asRelease(r)
}
