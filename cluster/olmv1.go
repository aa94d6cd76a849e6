package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster/process"
	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// OLM v1's components, as its upstream manifests name them.
const (
	Catalogd           = "catalogd"
	OperatorController = "operator-controller"
	// OLMv1Namespace is OLM v1's system namespace: operator-controller keeps
	// its Helm releases there.
	OLMv1Namespace = "olmv1-system"
	// catalogdServing names catalogd's serving certificate (catalogs,
	// webhook, metrics).
	catalogdServing = Catalogd + "-serving"
	// catalogdService is the Service name the certificate also holds, for
	// clients that reach catalogd in-cluster.
	catalogdService = "catalogd-service"
	// catalogdWebhookName is the mutating webhook that labels each
	// ClusterCatalog with its name (olm.operatorframework.io/metadata.name),
	// which ClusterExtensions select catalogs by.
	catalogdWebhookName = "catalogd-mutating-webhook-configuration"
	catalogdWebhookPath = "/mutate-olm-operatorframework-io-v1-clustercatalog"
	metadataNameLabel   = "olm.operatorframework.io/metadata.name"
)

// operatorControllerGates turns on operator-controller's SingleOwnNamespace
// support (spec.config.inline.watchNamespace), for operators whose CSV
// offers SingleNamespace or OwnNamespace: operator authors test those
// install modes here before a cluster admin turns the gate on. It turns
// off the webhook certificate providers: the local cluster runs neither
// cert-manager nor OpenShift's service-ca, and a bundle with webhooks is
// then refused up front ("certificate provider is nil") rather than half
// installed without its certificates.
const operatorControllerGates = "--feature-gates=SingleOwnNamespaceInstallSupport=true,WebhookProviderCertManager=false,WebhookProviderOpenshiftServiceCA=false"

// olmv1Components are OLM v1's processes on the host: catalogd, then
// operator-controller, which reads the catalogs catalogd serves.
func (c *Cluster) olmv1Components() []component {
	p := c.state.Ports.OLMv1
	cert, key := c.pki().Cert(catalogdServing)
	env := c.olmv1Env()
	catalogs := loopback(p.Catalogs)
	return []component{
		{
			name:  Catalogd,
			addrs: []string{catalogs, fmt.Sprintf(":%d", p.Webhook), loopback(p.CatalogdHealth), loopback(p.CatalogdMetrics)},
			args: []string{
				"--system-namespace=" + OLMv1Namespace,
				"--catalogs-server-addr=" + catalogs,
				// Where operator-controller, on this host, reads the catalogs.
				"--external-address=" + catalogs,
				"--cache-dir=" + c.path("olmv1", Catalogd),
				"--tls-cert=" + cert,
				"--tls-key=" + key,
				"--webhook-server-port=" + strconv.Itoa(p.Webhook),
				"--health-probe-bind-address=" + loopback(p.CatalogdHealth),
				"--metrics-bind-address=" + loopback(p.CatalogdMetrics),
				"--pull-cas-dir=" + c.olmv1CADir(),
				// The metas endpoint (/api/v1/metas), beside /api/v1/all.
				"--feature-gates=APIV1MetasHandler=true",
			},
			env:    append(env, "KUBECONFIG="+c.componentKubeconfig(Catalogd), serviceAccountEnv(Catalogd)),
			before: func(context.Context) error { return c.writeOLMv1Files() },
			// Ready, and its webhook and catalog server listen: a
			// ClusterCatalog written before the webhook answers is refused.
			health: func(ctx context.Context) error {
				if err := c.probe(ctx, plainHTTP, "http://"+loopback(p.CatalogdHealth)+"/readyz", ""); err != nil {
					return err
				}
				if err := dialTCP(ctx, loopback(p.Webhook)); err != nil {
					return fmt.Errorf("webhook: %w", err)
				}
				return dialTCP(ctx, catalogs)
			},
			after: func(ctx context.Context) error { return c.registerCatalogdWebhook(ctx) },
		},
		{
			name:  OperatorController,
			addrs: []string{loopback(p.ControllerHealth)},
			args: []string{
				"--system-namespace=" + OLMv1Namespace,
				"--catalogd-cas-dir=" + c.olmv1CADir(),
				"--pull-cas-dir=" + c.olmv1CADir(),
				"--cache-path=" + c.path("olmv1", OperatorController),
				"--health-probe-bind-address=" + loopback(p.ControllerHealth),
				operatorControllerGates,
			},
			env: append(env, "KUBECONFIG="+c.componentKubeconfig(OperatorController), serviceAccountEnv(OperatorController)),
			health: func(ctx context.Context) error {
				return c.probe(ctx, plainHTTP, "http://"+loopback(p.ControllerHealth)+"/readyz", "")
			},
		},
	}
}

// serviceAccountEnv tells an OLM v1 process on the host which
// ServiceAccount it stands for: it has no pod token to read it from (see
// tools/olmv1/overlay/sa). Its pull secrets are looked up in that
// ServiceAccount's namespace, OLM v1's.
func serviceAccountEnv(component string) string {
	return "OLMV1_SERVICE_ACCOUNT=" + OLMv1Namespace + "/" + component
}

// olmv1CADir holds the cluster's CA alone: catalogd serves the catalogs
// with a certificate it signed, and images on a registry with such a
// certificate can be pulled.
func (c *Cluster) olmv1CADir() string { return c.path("olmv1", "ca") }

// olmv1Home is the HOME of OLM v1's processes, for its registries.conf.
func (c *Cluster) olmv1Home() string { return c.path("olmv1", "home") }

// olmv1Env points containers/image, which both components pull images
// with, at a registries.conf of the cluster's own; the user's docker
// credentials stay reachable.
func (c *Cluster) olmv1Env() []string {
	env := []string{"HOME=" + c.olmv1Home()}
	if home, err := os.UserHomeDir(); err == nil {
		if docker := filepath.Join(home, ".docker"); dirExists(docker) {
			env = append(env, "DOCKER_CONFIG="+docker)
		}
	}
	return env
}

// loopbackRegistries are the registry hosts containers/image may speak
// plain HTTP to, as docker does for loopback: a registry at
// 127.0.0.1:PORT matches "127.0.0.1" (go.podman.io/image v5.40, which
// operator-controller v1.11.0 pins, matches a host entry for any port).
var loopbackRegistries = []string{"127.0.0.1", "localhost"}

// registriesConf is containers/image's registries.conf for the registries
// that speak plain HTTP.
func registriesConf(hosts []string) string {
	var b strings.Builder
	b.WriteString("# Written by chartpilot: registries OLM v1 pulls from over plain HTTP.\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\ninsecure = true\n", h)
	}
	return b.String()
}

// acceptAnythingPolicy is containers/image's signature policy that checks
// no signature.
const acceptAnythingPolicy = `{"default": [{"type": "insecureAcceptAnything"}]}` + "\n"

// writeOLMv1Files writes the CA directory, registries.conf and the
// signature policy.
func (c *Cluster) writeOLMv1Files() error {
	ca, err := os.ReadFile(c.pki().CACert)
	if err != nil {
		return fmt.Errorf("reading the cluster CA: %w", err)
	}
	if err := os.MkdirAll(c.olmv1CADir(), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(c.olmv1CADir(), "ca.crt"), ca, 0o644); err != nil {
		return err
	}
	dir := filepath.Join(c.olmv1Home(), ".config", "containers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "registries.conf"), []byte(registriesConf(loopbackRegistries)), 0o644); err != nil {
		return err
	}
	// The signature policy of the cluster's own, over whatever this host's
	// /etc/containers/policy.json says: accept, as OLM v1 does without one.
	return atomicfile.WriteFile(filepath.Join(dir, "policy.json"), []byte(acceptAnythingPolicy), 0o644)
}

// registerCatalogdWebhook points the API server at catalogd's webhook on
// this host, which labels each ClusterCatalog with its name, as
// catalogd's manifests do for its Service.
func (c *Cluster) registerCatalogdWebhook(ctx context.Context) error {
	ca, err := os.ReadFile(c.pki().CACert)
	if err != nil {
		return fmt.Errorf("reading the cluster CA: %w", err)
	}
	url := "https://" + loopback(c.state.Ports.OLMv1.Webhook) + catalogdWebhookPath
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	return applyWebhook(ctx, cs, catalogdWebhook(admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}))
}

// catalogdWebhook is catalogd's mutating webhook configuration reaching it
// through cc.
func catalogdWebhook(cc admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.MutatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(10)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: catalogdWebhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "inject-metadata-name.olm.operatorframework.io",
			ClientConfig:            cc,
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"olm.operatorframework.io"}, APIVersions: []string{"v1"}, Resources: []string{"clustercatalogs"},
				},
			}},
			// Only when the label is missing or wrong: every other write
			// of a ClusterCatalog goes through without a call.
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "MissingOrIncorrectMetadataNameLabel",
				Expression: fmt.Sprintf("'name' in object.metadata && (!has(object.metadata.labels) || !('%[1]s' in object.metadata.labels) || object.metadata.labels['%[1]s'] != object.metadata.name)",
					metadataNameLabel),
			}},
		}},
	}
}

func applyWebhook(ctx context.Context, cs kubernetes.Interface, want *admissionregistrationv1.MutatingWebhookConfiguration) error {
	api := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, want, metav1.CreateOptions{FieldManager: fieldManager})
	case err == nil:
		want.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, want, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return fmt.Errorf("registering catalogd's webhook: %w", err)
	}
	return nil
}

// bootstrapOLMv1 creates OLM v1's namespace and returns its CRDs.
func (c *Cluster) bootstrapOLMv1(ctx context.Context, crdDir string) ([]*unstructured.Unstructured, error) {
	cs, _, err := c.clients()
	if err != nil {
		return nil, err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OLMv1Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", OLMv1Namespace, err)
	}
	return crdsIn(crdDir)
}

// olmNamespaces are the namespaces of the OLM the cluster runs.
func (c *Cluster) olmNamespaces() []string {
	var out []string
	v0, v1 := c.olmVersions()
	if v0 {
		out = append(out, OLMNamespace, OperatorsNamespace)
	}
	if v1 {
		out = append(out, OLMv1Namespace)
	}
	return out
}

// olmDescription names the OLM the cluster runs, for progress lines.
func (c *Cluster) olmDescription() string {
	switch v0, v1 := c.olmVersions(); {
	case v0 && v1:
		return "v0 and v1"
	case v1:
		return "v1"
	case v0:
		return "v0"
	}
	return "none"
}

// settleOLM settles which OLM the cluster runs: the one asked for, else the
// one it ran before, else OLM v0.
func (c *Cluster) settleOLM() error {
	switch c.opts.OLM {
	case "":
		c.opts.OLM = c.state.OLM
		if c.opts.OLM == "" {
			c.opts.OLM = OLMv0
		}
	case OLMv0, OLMv1, OLMBoth:
	default:
		return fmt.Errorf("unknown OLM %q: want %s, %s or %s", c.opts.OLM, OLMv0, OLMv1, OLMBoth)
	}
	return nil
}

// olmVersions is what the cluster runs, none when it runs without OLM.
func (c *Cluster) olmVersions() (v0, v1 bool) {
	if c.state.WithoutOLM {
		return false, false
	}
	return c.state.OLM.runsV0(), c.state.OLM.runsV1()
}

// stopUnwanted stops the running components the cluster no longer has
// (OLM v1's after an up with --olm=v0, for instance): Up changes which OLM
// a cluster runs.
func (c *Cluster) stopUnwanted(comps []component) error {
	var errs []error
	for _, name := range []string{OLM, Catalog, Catalogd, OperatorController} {
		if slices.ContainsFunc(comps, func(comp component) bool { return comp.name == name }) {
			continue
		}
		err := process.Stop(c.pidFile(name), c.opts.StopTimeout)
		switch {
		case errors.Is(err, process.ErrNotRunning):
		case err != nil:
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		default:
			fmt.Fprintf(c.opts.Out, "  %-24s stopped (not part of this cluster's OLM any more)\n", name)
		}
	}
	return errors.Join(errs...)
}

// dialTCP answers nil once something listens on addr.
func dialTCP(ctx context.Context, addr string) error {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return conn.Close()
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// OLM v1's resources.
var (
	ClusterCatalogResource   = schema.GroupVersionResource{Group: "olm.operatorframework.io", Version: "v1", Resource: "clustercatalogs"}
	ClusterExtensionResource = schema.GroupVersionResource{Group: "olm.operatorframework.io", Version: "v1", Resource: "clusterextensions"}
)

// checkOLMv1 proves OLM v1 works without pulling anything: catalogd's
// webhook labels a ClusterCatalog with its name and catalogd reports it
// unavailable (as asked), operator-controller reports a ClusterExtension
// whose installer ServiceAccount does not exist; both go once deleted
// (their finalizers run).
func checkOLMv1(ctx context.Context, dyn dynamic.Interface, ns string) error {
	name := ns // cluster-scoped: the check's namespace name is unique
	cat := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"availabilityMode": "Unavailable",
			"source": map[string]any{"type": "Image", "image": map[string]any{"ref": "127.0.0.1:1/chartpilot-check:v1"}}},
	}}
	ext := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"namespace": ns, "serviceAccount": map[string]any{"name": "chartpilot-check-absent"},
			"source": map[string]any{"sourceType": "Catalog", "catalog": map[string]any{"packageName": "chartpilot-check"}}},
	}}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = dyn.Resource(ClusterExtensionResource).Delete(dctx, name, metav1.DeleteOptions{})
		_ = dyn.Resource(ClusterCatalogResource).Delete(dctx, name, metav1.DeleteOptions{})
	}()
	created, err := dyn.Resource(ClusterCatalogResource).Create(ctx, cat, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating a ClusterCatalog (catalogd's webhook must answer): %w", err)
	}
	if got := created.GetLabels()[metadataNameLabel]; got != name {
		return fmt.Errorf("catalogd's webhook did not label ClusterCatalog %s with %s (got %q)", name, metadataNameLabel, got)
	}
	if _, err := dyn.Resource(ClusterExtensionResource).Create(ctx, ext, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating a ClusterExtension: %w", err)
	}
	for _, r := range []schema.GroupVersionResource{ClusterCatalogResource, ClusterExtensionResource} {
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			u, err := dyn.Resource(r).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			return len(conds) > 0, nil
		})
		if err != nil {
			who := Catalogd
			if r == ClusterExtensionResource {
				who = OperatorController
			}
			return fmt.Errorf("%s did not report on %s %s: %w", who, r.Resource, name, err)
		}
	}
	for _, r := range []schema.GroupVersionResource{ClusterExtensionResource, ClusterCatalogResource} {
		if err := dyn.Resource(r).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting %s %s: %w", r.Resource, name, err)
		}
		if err := poll(ctx, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(r).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			return fmt.Errorf("%s %s was not removed (its finalizers did not run): %w", r.Resource, name, err)
		}
	}
	return nil
}
