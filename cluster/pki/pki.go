package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/chartpilot/chartpilot/internal/atomicfile"
)

// validity of every certificate: long enough that a developer's local
// cluster never expires under them.
const validity = 10 * 365 * 24 * time.Hour

// Identity is a client certificate's subject.
type Identity struct {
	// Name is the certificate's file stem and its CommonName (the Kubernetes user).
	Name string
	// User overrides the CommonName; defaults to Name.
	User string
	// Groups become the Organizations (the Kubernetes groups).
	Groups []string
}

// Serving describes a TLS serving certificate.
type Serving struct {
	Name     string
	DNSNames []string
	IPs      []net.IP
}

// Request lists what Ensure creates.
type Request struct {
	Clients []Identity
	Servers []Serving
}

// Set is the paths of what Ensure created or found.
type Set struct {
	Dir string
	// CACert and CAKey are the cluster's authority.
	CACert, CAKey string
	// ServiceAccountKey and ServiceAccountPub are the token signing pair.
	ServiceAccountKey, ServiceAccountPub string
}

// Cert returns the certificate and key paths for a client or server name.
func (s Set) Cert(name string) (cert, key string) {
	return filepath.Join(s.Dir, name+".crt"), filepath.Join(s.Dir, name+".key")
}

// Paths returns the Set of dir without creating anything.
func Paths(dir string) Set {
	return Set{
		Dir:               dir,
		CACert:            filepath.Join(dir, "ca.crt"),
		CAKey:             filepath.Join(dir, "ca.key"),
		ServiceAccountKey: filepath.Join(dir, "sa.key"),
		ServiceAccountPub: filepath.Join(dir, "sa.pub"),
	}
}

// Ensure creates, in dir, whatever of the request is missing.
func Ensure(dir string, req Request) (Set, error) {
	s := Paths(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return s, fmt.Errorf("creating %s: %w", dir, err)
	}
	ca, caKey, err := ensureCA(s)
	if err != nil {
		return s, err
	}
	if err := ensureServiceAccountKey(s); err != nil {
		return s, err
	}
	for _, id := range req.Clients {
		user := id.User
		if user == "" {
			user = id.Name
		}
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: user, Organization: id.Groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if err := ensureLeaf(s, id.Name, tmpl, ca, caKey); err != nil {
			return s, err
		}
	}
	for _, srv := range req.Servers {
		tmpl := &x509.Certificate{
			Subject:     pkix.Name{CommonName: srv.Name},
			DNSNames:    srv.DNSNames,
			IPAddresses: srv.IPs,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		if err := ensureLeaf(s, srv.Name, tmpl, ca, caKey); err != nil {
			return s, err
		}
	}
	return s, nil
}

func ensureCA(s Set) (*x509.Certificate, crypto.Signer, error) {
	if exists(s.CACert) && exists(s.CAKey) {
		return loadPair(s.CACert, s.CAKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "chartpilot-local-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	if err := writePair(s.CACert, s.CAKey, der, key); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func ensureServiceAccountKey(s Set) error {
	if exists(s.ServiceAccountKey) && exists(s.ServiceAccountPub) {
		return nil
	}
	// RSA: every consumer of service-account tokens verifies RS256.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.ServiceAccountPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return err
	}
	return atomicfile.WriteFile(s.ServiceAccountKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}), 0o600)
}

func ensureLeaf(s Set, name string, tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer) error {
	certPath, keyPath := s.Cert(name)
	if exists(certPath) && exists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(validity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("creating certificate %s: %w", name, err)
	}
	return writePair(certPath, keyPath, der, key)
}

func writePair(certPath, keyPath string, der []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	// Key first: a certificate without its key is never left behind as "present".
	if err := atomicfile.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return atomicfile.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM: delete the cluster state (cluster down --wipe) to regenerate", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", certPath, err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", keyPath, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: not a signing key", keyPath)
	}
	return cert, signer, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}
