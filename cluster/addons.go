package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"text/template"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/apply"
	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/toolchain"
	"github.com/chartpilot/chartpilot/internal/podhealth"
)

// installAddons runs what a real node's cluster runs in pods: cluster DNS,
// and OLM as its own chart installs it, with the images built here. It
// returns once their Deployments are available.
func (c *Cluster) installAddons(ctx context.Context, inst *toolchain.Installation) error {
	began := time.Now()
	objs, err := dnsObjects(c.images[images.CoreDNS])
	if err != nil {
		return err
	}
	waitFor := []deploymentRef{{"kube-system", "coredns"}}
	v0, v1 := c.olmVersions()
	if v0 {
		olm, err := olmObjects(inst.OLMChart, c.images)
		if err != nil {
			return err
		}
		objs = append(objs, olm...)
		waitFor = append(waitFor, deploymentRef{OLMNamespace, "olm-operator"}, deploymentRef{OLMNamespace, "catalog-operator"})
	}
	if v1 {
		olmv1, err := c.olmv1PodObjects(c.images)
		if err != nil {
			return err
		}
		objs = append(objs, olmv1...)
		waitFor = append(waitFor, deploymentRef{OLMv1Namespace, catalogdDeployment}, deploymentRef{OLMv1Namespace, controllerDeployment})
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	if err := apply.Apply(ctx, objs, apply.Options{Config: cfg, FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("installing the cluster's add-ons: %w", err)
	}
	cs, _, err := c.clients()
	if err != nil {
		return err
	}
	for _, d := range waitFor {
		if err := c.waitAvailable(ctx, cs, d); err != nil {
			return err
		}
	}
	if v1 {
		// Once catalogd serves: a ClusterCatalog written before would be refused.
		if err := c.registerCatalogdServiceWebhook(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.opts.Out, "  %-24s cluster DNS and OLM (%s) running in pods, available in %s\n", "add-ons", c.olmDescription(), time.Since(began).Round(10*time.Millisecond))
	return nil
}

type deploymentRef struct{ namespace, name string }

// waitAvailable waits for a Deployment to have all its replicas available;
// on timeout the error says what its pods wait for.
func (c *Cluster) waitAvailable(ctx context.Context, cs kubernetes.Interface, d deploymentRef) error {
	var last *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		dep, err := cs.AppsV1().Deployments(d.namespace).Get(ctx, d.name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = dep
		want := int32(1)
		if dep.Spec.Replicas != nil {
			want = *dep.Spec.Replicas
		}
		return dep.Status.ObservedGeneration >= dep.Generation && dep.Status.AvailableReplicas >= want, nil
	})
	if err == nil {
		return nil
	}
	why := "not created"
	if last != nil {
		why = podhealth.Problems(ctx, cs, d.namespace, last.Spec.Selector)
	}
	return fmt.Errorf("deployment %s/%s did not become available within %s: %s (kubelet log: %s)", d.namespace, d.name, c.opts.StartTimeout, why, c.LogFile(Kubelet))
}

// dnsTemplate is the cluster's DNS: CoreDNS serving the cluster domain
// from the API, as the kube-dns Service at node.ClusterDNS. There is no
// upstream resolver: only loopback is reachable.
var dnsTemplate = template.Must(template.New("dns").Parse(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: coredns
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
- kind: ServiceAccount
  name: coredns
  namespace: kube-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: coredns
  namespace: kube-system
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes {{.Domain}} in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
        cache 30
        loadbalance
    }
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: coredns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  replicas: 1
  selector:
    matchLabels: {k8s-app: kube-dns}
  template:
    metadata:
      labels: {k8s-app: kube-dns}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      priorityClassName: system-cluster-critical
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: coredns
        image: {{.Image}}
        args: [-conf, /etc/coredns/Corefile]
        ports:
        - {name: dns, containerPort: 53, protocol: UDP}
        - {name: dns-tcp, containerPort: 53, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 2
        livenessProbe:
          httpGet: {path: /health, port: 8080}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
        resources:
          requests: {cpu: 10m, memory: 30Mi}
        volumeMounts:
        - {name: config, mountPath: /etc/coredns, readOnly: true}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns}
spec:
  clusterIP: {{.IP}}
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
`))

func dnsObjects(image string) ([]*unstructured.Unstructured, error) {
	if image == "" {
		return nil, errors.New("the CoreDNS image was not published")
	}
	var b bytes.Buffer
	if err := dnsTemplate.Execute(&b, map[string]string{"Image": image, "IP": node.ClusterDNS, "Domain": node.ClusterDomain}); err != nil {
		return nil, err
	}
	return decodeObjects(b.Bytes(), "the cluster DNS manifests")
}

// olmLeftOut are the templates of OLM's chart a local cluster does without:
// the package server (an aggregated API nothing here uses) and the default
// catalog, whose image lives on a registry this machine cannot reach.
var olmLeftOut = map[string]string{
	"0000_50_olm_15-packageserver.clusterserviceversion.yaml": "the package server",
	"0000_50_olm_17-upstream-operators.catalogsource.yaml":    "the default catalog",
}

// olmObjects renders OLM's own chart with the images built here.
func olmObjects(chartDir string, refs images.Refs) ([]*unstructured.Unstructured, error) {
	olmImage, opmImage := refs[images.OLM], refs[images.OPM]
	if olmImage == "" || opmImage == "" {
		return nil, errors.New("the OLM and opm images were not published")
	}
	ch, err := chart.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading OLM's chart: %w", err)
	}
	image := map[string]any{"ref": olmImage, "pullPolicy": "IfNotPresent"}
	r, err := ch.Render(chart.RenderOptions{
		ReleaseName: "olm",
		Namespace:   OLMNamespace,
		Values: map[string]any{
			"namespace":          OLMNamespace,
			"catalog_namespace":  OLMNamespace,
			"operator_namespace": OperatorsNamespace,
			"olm":                map[string]any{"image": image},
			"catalog": map[string]any{
				"image":        image,
				"commandArgs":  "--configmapServerImage=" + opmImage,
				"opmImageArgs": "--opmImage=" + opmImage,
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("rendering OLM's chart: %w", err)
	}
	var objs []*unstructured.Unstructured
	for _, m := range r.Objects {
		if _, out := olmLeftOut[path.Base(m.Source)]; out {
			continue
		}
		objs = append(objs, m.Object)
	}
	return objs, nil
}

// decodeObjects reads a YAML stream of objects.
func decodeObjects(data []byte, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding %s: %w", source, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
