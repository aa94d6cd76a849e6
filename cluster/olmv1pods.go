package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"text/template"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
)

// On a real node OLM v1 runs in pods, as its manifests install it: catalogd
// behind the catalogd-service Service (catalogs over HTTPS on 443, its
// webhook on 9443), operator-controller reading the catalogs through it;
// both pull images with containers/image, from the cluster's registry.
const (
	catalogdDeployment   = "catalogd-controller-manager"
	controllerDeployment = "operator-controller-controller-manager"
	// catalogdCertSecret holds catalogd's serving certificate and the CA;
	// olmv1CASecret the CA alone, for operator-controller.
	catalogdCertSecret = "catalogd-service-cert"
	olmv1CASecret      = "olmv1-ca"
	// containersConfig is /etc/containers of both: registries.conf and the
	// signature policy.
	containersConfig = "olmv1-containers"
)

// olmv1PodsTemplate are OLM v1's ServiceAccounts, RBAC, Deployments and
// catalogd's Service. Both run as cluster admins, as OLM v1's processes do
// on the host (OLM v0's chart gives its operators cluster-admin too).
var olmv1PodsTemplate = template.Must(template.New("olmv1").Parse(`{{range .Components}}apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{.Deployment}}
  namespace: {{$.Namespace}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: chartpilot:{{.Deployment}}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: {{.Deployment}}
  namespace: {{$.Namespace}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{.Deployment}}
  namespace: {{$.Namespace}}
  labels: {control-plane: {{.Deployment}}}
spec:
  replicas: 1
  selector:
    matchLabels: {control-plane: {{.Deployment}}}
  template:
    metadata:
      labels: {control-plane: {{.Deployment}}}
    spec:
      serviceAccountName: {{.Deployment}}
      priorityClassName: system-cluster-critical
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: manager
        image: {{$.Image}}
        command: [/bin/{{.Binary}}]
        args:
{{- range .Args}}
        - {{.}}
{{- end}}
        env:
        - {name: HOME, value: /tmp}
        readinessProbe:
          httpGet: {path: /readyz, port: 8081}
          periodSeconds: 2
        livenessProbe:
          httpGet: {path: /healthz, port: 8081}
          initialDelaySeconds: 15
        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
        resources:
          requests: {cpu: 10m, memory: 64Mi}
        volumeMounts:
        - {name: cache, mountPath: /var/cache}
        - {name: ca-certs, mountPath: /var/ca-certs, readOnly: true}
        - {name: containers, mountPath: /etc/containers, readOnly: true}
{{- if .Serving}}
        - {name: certs, mountPath: /var/certs, readOnly: true}
{{- end}}
      volumes:
      - name: cache
        emptyDir: {}
      - name: ca-certs
        secret: {secretName: {{$.CASecret}}}
      - name: containers
        configMap: {name: {{$.ContainersConfig}}}
{{- if .Serving}}
      - name: certs
        secret: {secretName: {{$.CertSecret}}}
{{- end}}
---
{{end}}apiVersion: v1
kind: Service
metadata:
  name: {{.Service}}
  namespace: {{.Namespace}}
spec:
  selector: {control-plane: {{.CatalogdDeployment}}}
  ports:
  - {name: https, port: 443, targetPort: 8443}
  - {name: webhook, port: 9443, targetPort: 9443}
  - {name: metrics, port: 7443, targetPort: 7443}
`))

// olmv1PodComponent is one of OLM v1's Deployments.
type olmv1PodComponent struct {
	Deployment, Binary string
	Args               []string
	// Serving mounts catalogd's serving certificate.
	Serving bool
}

// olmv1PodObjects are OLM v1's objects on a real node: its Secrets and
// ConfigMap, then its ServiceAccounts, RBAC, Deployments and Service.
func (c *Cluster) olmv1PodObjects(refs images.Refs) ([]*unstructured.Unstructured, error) {
	image := refs[images.OLMv1]
	if image == "" {
		return nil, errors.New("OLM v1's image was not published")
	}
	set := c.pki()
	ca, err := os.ReadFile(set.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	certFile, keyFile := set.Cert(catalogdServing)
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	typed := []runtime.Object{
		olmv1Secret(catalogdCertSecret, map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": ca}),
		olmv1Secret(olmv1CASecret, map[string][]byte{"ca.crt": ca}),
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: containersConfig, Namespace: OLMv1Namespace},
			Data: map[string]string{
				// The cluster's registry, on this host's address on the node's link.
				"registries.conf": registriesConf([]string{node.HostIP}),
				"policy.json":     acceptAnythingPolicy,
			},
		},
	}
	var objs []*unstructured.Unstructured
	for _, o := range typed {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	service := catalogdService + "." + OLMv1Namespace + ".svc"
	data := map[string]any{
		"Namespace": OLMv1Namespace, "Image": image, "Service": catalogdService, "CatalogdDeployment": catalogdDeployment,
		"CASecret": olmv1CASecret, "CertSecret": catalogdCertSecret, "ContainersConfig": containersConfig,
		"Components": []olmv1PodComponent{
			{Deployment: catalogdDeployment, Binary: Catalogd, Serving: true, Args: []string{
				"--leader-elect=false", "--system-namespace=" + OLMv1Namespace,
				"--external-address=" + service, "--catalogs-server-addr=:8443", "--metrics-bind-address=:7443",
				"--tls-cert=/var/certs/tls.crt", "--tls-key=/var/certs/tls.key", "--pull-cas-dir=/var/ca-certs",
				"--cache-dir=/var/cache/", "--health-probe-bind-address=:8081", "--feature-gates=APIV1MetasHandler=true",
			}},
			{Deployment: controllerDeployment, Binary: OperatorController, Args: []string{
				"--leader-elect=false", "--system-namespace=" + OLMv1Namespace,
				"--catalogd-cas-dir=/var/ca-certs", "--pull-cas-dir=/var/ca-certs",
				"--cache-path=/var/cache", "--health-probe-bind-address=:8081", operatorControllerGates,
			}},
		},
	}
	var b bytes.Buffer
	if err := olmv1PodsTemplate.Execute(&b, data); err != nil {
		return nil, err
	}
	rest, err := decodeObjects(b.Bytes(), "OLM v1's manifests")
	if err != nil {
		return nil, err
	}
	return append(objs, rest...), nil
}

func olmv1Secret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: OLMv1Namespace},
		Data:       data,
	}
}

// registerCatalogdServiceWebhook points the API server at catalogd's
// webhook through its Service (the API server calls its endpoints: see
// apiServerNodeArgs).
func (c *Cluster) registerCatalogdServiceWebhook(ctx context.Context) error {
	ca, err := os.ReadFile(c.pki().CACert)
	if err != nil {
		return fmt.Errorf("reading the cluster CA: %w", err)
	}
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	svc := &admissionregistrationv1.ServiceReference{Namespace: OLMv1Namespace, Name: catalogdService,
		Path: ptr.To(catalogdWebhookPath), Port: ptr.To(int32(9443))}
	return applyWebhook(ctx, cs, catalogdWebhook(admissionregistrationv1.WebhookClientConfig{Service: svc, CABundle: ca}))
}
