package chart_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/chartpilot/chartpilot/chart"
	"github.com/chartpilot/chartpilot/chart/charttest"
)

// A chart that makes its own TLS certificates renders the same objects
// with ReuseKeys, valid certificates signed by its CA, from the key the
// Renderer made once; without it, each render makes new keys, as Helm does.
func TestReuseKeys(t *testing.T) {
	c := charttest.Load(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: tls\nversion: 0.1.0\n",
		"templates/secret.yaml": `{{- $ca := genCA "ca" 365 -}}
{{- $cert := genSignedCert "svc" nil (list "svc.example.com") 365 $ca -}}
{{- $self := genSelfSignedCert "self" nil nil 365 -}}
apiVersion: v1
kind: Secret
metadata:
  name: tls
data:
  ca.crt: {{ $ca.Cert | b64enc }}
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
  self.crt: {{ $self.Cert | b64enc }}
  rsa.key: {{ genPrivateKey "rsa" | b64enc }}
  ec.key: {{ genPrivateKey "ecdsa" | b64enc }}
`,
	})
	r, err := c.Renderer()
	if err != nil {
		t.Fatal(err)
	}
	render := func(reuse bool) map[string]string {
		t.Helper()
		out, err := r.Render(chart.RenderOptions{ReuseKeys: reuse})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Objects) != 1 {
			t.Fatalf("%d objects, want the Secret", len(out.Objects))
		}
		data, _, _ := unstructured.NestedStringMap(out.Objects[0].Object.Object, "data")
		decoded := map[string]string{}
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			decoded[k] = string(b)
		}
		return decoded
	}
	first, second := render(true), render(true)
	for _, k := range []string{"tls.key", "rsa.key", "ec.key"} {
		if first[k] == "" || first[k] != second[k] {
			t.Errorf("ReuseKeys: %s differs between renders (or is empty): not reused", k)
		}
	}
	ca, leaf := parseCert(t, first["ca.crt"]), parseCert(t, first["tls.crt"])
	if !ca.IsCA || leaf.CheckSignatureFrom(ca) != nil || leaf.DNSNames[0] != "svc.example.com" {
		t.Errorf("ReuseKeys: the certificate is not svc.example.com's signed by the CA (CA %t, DNS %v)", ca.IsCA, leaf.DNSNames)
	}
	parseCert(t, first["self.crt"])
	if a, b := render(false), render(false); a["tls.key"] == b["tls.key"] || a["rsa.key"] == b["rsa.key"] {
		t.Error("without ReuseKeys two renders made the same keys")
	}
}

func parseCert(t *testing.T, data string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(data))
	if block == nil {
		t.Fatalf("no PEM in %q", data)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
