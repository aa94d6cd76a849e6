package cluster

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"

	"github.com/chartpilot/chartpilot/cluster/images"
	"github.com/chartpilot/chartpilot/cluster/node"
	"github.com/chartpilot/chartpilot/cluster/pki"
)

func TestParseOLMVersions(t *testing.T) {
	tests := []struct {
		in          string
		want        OLMVersions
		wantWithout bool
		wantErr     string
	}{
		{in: "v0", want: OLMv0},
		{in: "v1", want: OLMv1},
		{in: "both", want: OLMBoth},
		// --olm was a boolean: its values keep their meaning.
		{in: "true", want: OLMv0},
		{in: "false", wantWithout: true},
		{in: "none", wantWithout: true},
		{in: "v2", wantErr: `unknown OLM "v2": want v0, v1, both or none`},
	}
	for _, tt := range tests {
		got, without, err := ParseOLMVersions(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseOLMVersions(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || without != tt.wantWithout {
			t.Errorf("ParseOLMVersions(%q) = %q, %v, %v; want %q, %v", tt.in, got, without, err, tt.want, tt.wantWithout)
		}
	}
}

// Which OLM runs decides the components: a cluster created before OLM v1
// (no OLM in its state) runs OLM v0 as it did.
func TestOLMComponents(t *testing.T) {
	tests := []struct {
		olm     OLMVersions
		without bool
		want    []string
		notWant []string
	}{
		{olm: "", want: []string{OLM, Catalog}, notWant: []string{Catalogd, OperatorController}},
		{olm: OLMv0, want: []string{OLM, Catalog}, notWant: []string{Catalogd, OperatorController}},
		{olm: OLMv1, want: []string{Catalogd, OperatorController}, notWant: []string{OLM, Catalog}},
		{olm: OLMBoth, want: []string{OLM, Catalog, Catalogd, OperatorController}},
		{olm: OLMBoth, without: true, notWant: []string{OLM, Catalog, Catalogd, OperatorController}},
	}
	for _, tt := range tests {
		c := &Cluster{opts: Options{StateDir: t.TempDir()}, state: state{OLM: tt.olm, WithoutOLM: tt.without, Node: NodeKwok}}
		var names []string
		for _, comp := range c.components(nil) {
			names = append(names, comp.name)
		}
		got := strings.Join(names, " ")
		for _, w := range tt.want {
			if !strings.Contains(" "+got+" ", " "+w+" ") {
				t.Errorf("olm %q without %v: components %s lack %s", tt.olm, tt.without, got, w)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(" "+got+" ", " "+w+" ") {
				t.Errorf("olm %q without %v: components %s hold %s", tt.olm, tt.without, got, w)
			}
		}
	}
}

func TestRegistriesConf(t *testing.T) {
	got := registriesConf(loopbackRegistries)
	for _, want := range []string{"[[registry]]\nlocation = \"127.0.0.1\"\ninsecure = true\n", "location = \"localhost\""} {
		if !strings.Contains(got, want) {
			t.Errorf("registries.conf lacks %q:\n%s", want, got)
		}
	}
}

// catalogd's webhook is the one its manifests register: CREATE and UPDATE
// of ClusterCatalogs, called only when the name label is missing or wrong.
func TestCatalogdWebhook(t *testing.T) {
	url := "https://127.0.0.1:1/x"
	wh := catalogdWebhook(admissionregistrationv1.WebhookClientConfig{URL: &url})
	w := wh.Webhooks[0]
	if *w.ClientConfig.URL != url || w.Rules[0].Resources[0] != "clustercatalogs" || len(w.Rules[0].Operations) != 2 {
		t.Errorf("webhook = %+v", w)
	}
	if !strings.Contains(w.MatchConditions[0].Expression, "object.metadata.labels['olm.operatorframework.io/metadata.name'] != object.metadata.name") {
		t.Errorf("match condition = %s", w.MatchConditions[0].Expression)
	}
}

// On a real node OLM v1 runs from its image in pods: catalogd with its
// serving certificate behind catalogd-service, both with the cluster's CA
// and a registries.conf for the cluster's registry.
func TestOLMv1PodObjects(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{opts: Options{StateDir: dir}, state: state{OLM: OLMv1, Node: NodeReal}}
	if _, err := pki.Ensure(c.path("pki"), pkiRequest()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.olmv1PodObjects(images.Refs{}); err == nil {
		t.Error("no error without OLM v1's image")
	}
	objs, err := c.olmv1PodObjects(images.Refs{images.OLMv1: "10.89.0.1:5000/chartpilot/olmv1@sha256:abc"})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		data, _ := yaml.Marshal(o.Object)
		all.Write(data)
		all.WriteString("---\n")
	}
	want := "Secret/catalogd-service-cert Secret/olmv1-ca ConfigMap/olmv1-containers ServiceAccount/catalogd-controller-manager ClusterRoleBinding/chartpilot:catalogd-controller-manager Deployment/catalogd-controller-manager ServiceAccount/operator-controller-controller-manager ClusterRoleBinding/chartpilot:operator-controller-controller-manager Deployment/operator-controller-controller-manager Service/catalogd-service"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("objects:\n%s\nwant\n%s", got, want)
	}
	for _, w := range []string{"image: 10.89.0.1:5000/chartpilot/olmv1@sha256:abc", "command:\n        - /bin/catalogd", "--external-address=catalogd-service.olmv1-system.svc",
		"--tls-cert=/var/certs/tls.crt", "command:\n        - /bin/operator-controller", "--catalogd-cas-dir=/var/ca-certs",
		"location = \"" + node.HostIP + "\"", "port: 443\n    targetPort: 8443", "secretName: catalogd-service-cert"} {
		if !strings.Contains(all.String(), w) {
			t.Errorf("objects lack %q", w)
		}
	}
	if t.Failed() {
		t.Log(all.String())
	}
}
