package pki

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"slices"
	"testing"
)

var request = Request{
	Clients: []Identity{
		{Name: "admin", User: "chartpilot-admin", Groups: []string{"system:masters"}},
		{Name: "kube-scheduler", User: "system:kube-scheduler"},
		{Name: "plain"},
	},
	Servers: []Serving{
		{Name: "kube-apiserver", DNSNames: []string{"localhost", "kubernetes.default.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}},
	},
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s is not PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEnsure(t *testing.T) {
	set, err := Ensure(t.TempDir(), request)
	if err != nil {
		t.Fatal(err)
	}
	ca := readCert(t, set.CACert)
	if !ca.IsCA {
		t.Fatal("CA certificate is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	tests := []struct {
		name   string
		usage  x509.ExtKeyUsage
		cn     string
		groups []string
		dns    string
		ip     string
	}{
		{name: "admin", usage: x509.ExtKeyUsageClientAuth, cn: "chartpilot-admin", groups: []string{"system:masters"}},
		{name: "kube-scheduler", usage: x509.ExtKeyUsageClientAuth, cn: "system:kube-scheduler"},
		{name: "plain", usage: x509.ExtKeyUsageClientAuth, cn: "plain"},
		{name: "kube-apiserver", usage: x509.ExtKeyUsageServerAuth, cn: "kube-apiserver", dns: "kubernetes.default.svc", ip: "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certPath, keyPath := set.Cert(tt.name)
			cert := readCert(t, certPath)
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("does not verify against the CA for %v: %v", tt.usage, err)
			}
			if cert.Subject.CommonName != tt.cn || !slices.Equal(cert.Subject.Organization, tt.groups) {
				t.Errorf("subject %v, want CN %s, O %v", cert.Subject, tt.cn, tt.groups)
			}
			if tt.dns != "" {
				if err := cert.VerifyHostname(tt.dns); err != nil {
					t.Error(err)
				}
				if err := cert.VerifyHostname(tt.ip); err != nil {
					t.Error(err)
				}
			}
			fi, err := os.Stat(keyPath)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("key mode %v, want 0600", fi.Mode().Perm())
			}
		})
	}
	if _, err := os.Stat(set.ServiceAccountKey); err != nil {
		t.Error(err)
	}
}

// A second Ensure keeps everything: kubeconfigs and tokens stay valid.
func TestEnsureIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	first, err := Ensure(dir, request)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	paths := []string{first.CACert, first.CAKey, first.ServiceAccountKey, first.ServiceAccountPub}
	c, k := first.Cert("admin")
	paths = append(paths, c, k)
	for _, p := range paths {
		before[p], _ = os.ReadFile(p)
	}
	// More identities later: only the new one is created.
	more := request
	more.Clients = append(slices.Clone(request.Clients), Identity{Name: "kwok"})
	if _, err := Ensure(dir, more); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		after, _ := os.ReadFile(p)
		if string(after) != string(before[p]) {
			t.Errorf("%s changed on the second Ensure", p)
		}
	}
	if _, err := os.Stat(dir + "/kwok.crt"); err != nil {
		t.Errorf("new identity not created: %v", err)
	}
}

func TestEnsureRejectsCorruptCA(t *testing.T) {
	dir := t.TempDir()
	set := Paths(dir)
	if err := os.WriteFile(set.CACert, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(set.CAKey, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(dir, request); err == nil {
		t.Fatal("Ensure accepted a corrupt CA")
	}
}
