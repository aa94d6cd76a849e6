package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The secure metrics as scaffolded, with the optional pieces enabled as
// their comments say (Prometheus, cert-manager, the NetworkPolicy): the
// Deployment, Service, ServiceMonitor, Certificate and NetworkPolicy agree
// on the port, the Secret and the Service's DNS name.
func TestSecureMetricsPieces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "webapp-operator")
	if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	uncomment(t, filepath.Join(dir, "config", "default", "kustomization.yaml"),
		"#- ../prometheus", "#- ../network-policy", "#- ../certmanager", "#patches:", "#- path: cert_metrics_manager_patch.yaml", "#  target:", "#    kind: Deployment")
	uncomment(t, filepath.Join(dir, "config", "prometheus", "kustomization.yaml"),
		"#patches:", "#- path: monitor_tls_patch.yaml", "#  target:", "#    kind: ServiceMonitor")
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "config", "default"))
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, r := range resMap.Resources() {
		// Through JSON: numbers become int64, as Unstructured wants.
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	get := func(key string) *unstructured.Unstructured {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("config/default lacks %s", key)
		}
		return o
	}
	const prefix, ns = "webapp-operator-", "webapp-operator-system"
	svc := get("Service/" + prefix + "controller-manager-metrics-service")
	dnsName := svc.GetName() + "." + ns + ".svc"

	dep := get("Deployment/" + prefix + "controller-manager")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, want := range []string{"--metrics-bind-address=:8443", "--metrics-secure", "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs"} {
		if !slices.Contains(args, want) {
			t.Errorf("the manager's args %q lack %s", args, want)
		}
	}
	volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(strings.Join(flatten(volumes), " "), "metrics-server-cert") {
		t.Errorf("the manager does not mount the Secret metrics-server-cert: %v", volumes)
	}

	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	port := ports[0].(map[string]any)
	if port["name"] != "https" || port["targetPort"] != int64(8443) {
		t.Errorf("the metrics Service's port: %v", port)
	}

	mon := get("ServiceMonitor/" + prefix + "controller-manager-metrics-monitor")
	endpoints, _, _ := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
	ep := endpoints[0].(map[string]any)
	server, _, _ := unstructured.NestedString(ep, "tlsConfig", "serverName")
	caSecret, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name")
	if ep["scheme"] != "https" || ep["port"] != "https" || ep["bearerTokenFile"] == nil || server != dnsName || caSecret != "metrics-server-cert" {
		t.Errorf("the ServiceMonitor's endpoint %v: want HTTPS with the token, server name %s and the CA of metrics-server-cert", ep, dnsName)
	}

	cert := get("Certificate/" + prefix + "metrics-certs")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	get("Issuer/" + issuer)
	if !slices.Contains(dnsNames, dnsName) || secret != "metrics-server-cert" {
		t.Errorf("the Certificate names %q into %s, want %s into metrics-server-cert", dnsNames, secret, dnsName)
	}

	np := get("NetworkPolicy/" + prefix + "allow-metrics-traffic")
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if !strings.Contains(strings.Join(flatten(ingress), " "), "8443") {
		t.Errorf("the NetworkPolicy does not open the metrics port: %v", ingress)
	}
	reader := get("ClusterRole/" + prefix + "metrics-reader")
	if rules, _, _ := unstructured.NestedSlice(reader.Object, "rules"); !strings.Contains(strings.Join(flatten(rules), " "), "/metrics") {
		t.Errorf("metrics-reader rules: %v", rules)
	}
}

// uncomment removes the leading # of each line of path that is one of lines.
func uncomment(t *testing.T, path string, lines ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.Split(string(data), "\n")
	for _, want := range lines {
		i := slices.Index(out, want)
		if i < 0 {
			t.Fatalf("%s has no line %q", path, want)
		}
		out[i] = strings.TrimPrefix(want, "#")
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flatten lists the scalars of a decoded YAML value, as strings.
func flatten(v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for _, x := range v {
			out = append(out, flatten(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, flatten(x)...)
		}
		return out
	default:
		return []string{fmt.Sprint(v)}
	}
}
