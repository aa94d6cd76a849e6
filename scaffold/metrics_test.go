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
// their comments say: the Deployment, Service, ServiceMonitor, certificate
// and NetworkPolicy agree on the port, the Secret and the Service's DNS
// name, and the ServiceMonitor verifies the operator's certificate (never
// insecureSkipVerify, which would hand Prometheus's token to whatever
// answers): against cert-manager's CA, the OpenShift service CA's, or, with
// neither, none it could trust (no scrape, but a project that deploys).
func TestSecureMetricsPieces(t *testing.T) {
	const prefix, ns = "webapp-operator-", "webapp-operator-system"
	defaultLines := []string{"#- ../prometheus", "#- ../network-policy"}
	certMounted := []string{"#patches:", "#- path: cert_metrics_manager_patch.yaml", "#  target:", "#    kind: Deployment"}
	tests := []struct {
		name string
		// defaults and prometheus are the lines uncommented in
		// config/default's and config/prometheus's kustomization.yaml.
		defaults, prometheus []string
		// caSecret or caConfigMap is where the ServiceMonitor takes its CA.
		caSecret, caConfigMap string
		// mounted says the manager serves the Secret metrics-server-cert.
		mounted bool
		// check looks at what only this setup has.
		check func(t *testing.T, get func(string) *unstructured.Unstructured, dnsName string)
	}{{
		name:     "neither: verifies, with no CA to trust",
		defaults: defaultLines,
		caSecret: "metrics-server-cert",
	}, {
		name:     "cert-manager",
		defaults: slices.Concat(defaultLines, []string{"#- ../certmanager"}, certMounted),
		caSecret: "metrics-server-cert",
		mounted:  true,
		check: func(t *testing.T, get func(string) *unstructured.Unstructured, dnsName string) {
			cert := get("Certificate/" + prefix + "metrics-certs")
			dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
			issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
			secret, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
			get("Issuer/" + issuer)
			if !slices.Contains(dnsNames, dnsName) || secret != "metrics-server-cert" {
				t.Errorf("the Certificate names %q into %s, want %s into metrics-server-cert", dnsNames, secret, dnsName)
			}
		},
	}, {
		name: "service-ca",
		defaults: slices.Concat(defaultLines, []string{"#- ../service-ca"}, certMounted,
			[]string{"#- path: service_ca_patch.yaml", "#  target:", "#    kind: Service", "#    name: controller-manager-metrics-service"}),
		prometheus:  []string{"#patches:", "#- path: monitor_service_ca_patch.yaml", "#  target:", "#    kind: ServiceMonitor"},
		caConfigMap: prefix + "metrics-service-ca",
		mounted:     true,
		check: func(t *testing.T, get func(string) *unstructured.Unstructured, _ string) {
			svc := get("Service/" + prefix + "controller-manager-metrics-service")
			if got := svc.GetAnnotations()["service.beta.openshift.io/serving-cert-secret-name"]; got != "metrics-server-cert" {
				t.Errorf("the metrics Service asks the service CA for %q, want metrics-server-cert", got)
			}
			cm := get("ConfigMap/" + prefix + "metrics-service-ca")
			if cm.GetAnnotations()["service.beta.openshift.io/inject-cabundle"] != "true" {
				t.Errorf("the CA ConfigMap is not injected: %v", cm.GetAnnotations())
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "webapp-operator")
			if err := Init(Options{APIOptions: APIOptions{Chart: chartDir("webapp")}, Dir: dir}); err != nil {
				t.Fatal(err)
			}
			uncomment(t, filepath.Join(dir, "config", "default", "kustomization.yaml"), tt.defaults...)
			uncomment(t, filepath.Join(dir, "config", "prometheus", "kustomization.yaml"), tt.prometheus...)
			get := buildDefault(t, dir)
			svc := get("Service/" + prefix + "controller-manager-metrics-service")
			dnsName := svc.GetName() + "." + ns + ".svc"

			dep := get("Deployment/" + prefix + "controller-manager")
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			for _, want := range []string{"--metrics-bind-address=:8443", "--metrics-secure"} {
				if !slices.Contains(args, want) {
					t.Errorf("the manager's args %q lack %s", args, want)
				}
			}
			volumes, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "volumes")
			mounted := strings.Contains(strings.Join(flatten(volumes), " "), "metrics-server-cert")
			if mounted != tt.mounted || slices.Contains(args, "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs") != tt.mounted {
				t.Errorf("the manager mounts metrics-server-cert: %t (args %q), want %t", mounted, args, tt.mounted)
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
			skip, _, _ := unstructured.NestedFieldNoCopy(ep, "tlsConfig", "insecureSkipVerify")
			caSecret, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "secret", "name")
			caConfigMap, _, _ := unstructured.NestedString(ep, "tlsConfig", "ca", "configMap", "name")
			if ep["scheme"] != "https" || ep["port"] != "https" || ep["bearerTokenFile"] == nil || server != dnsName || skip != false {
				t.Errorf("the ServiceMonitor's endpoint %v: want HTTPS with the token, server name %s, verified", ep, dnsName)
			}
			if caSecret != tt.caSecret || caConfigMap != tt.caConfigMap {
				t.Errorf("the ServiceMonitor trusts the CA of Secret %q, ConfigMap %q; want %q, %q", caSecret, caConfigMap, tt.caSecret, tt.caConfigMap)
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
			if tt.check != nil {
				tt.check(t, get, dnsName)
			}
		})
	}
}

// buildDefault runs kustomize on the project's config/default and returns
// a lookup of its objects by kind/name.
func buildDefault(t *testing.T, dir string) func(string) *unstructured.Unstructured {
	t.Helper()
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
	return func(key string) *unstructured.Unstructured {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("config/default lacks %s", key)
		}
		return o
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
