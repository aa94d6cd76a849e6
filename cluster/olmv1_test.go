package cluster

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
