package chart

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"reflect"
	"sync"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// keyPool makes sprig's key and certificate functions (genPrivateKey,
// genCA, genSelfSignedCert, genSignedCert) use one key of each type, made
// on first use, instead of a new one per call. For renders whose objects
// are read and never applied (RenderOptions.ReuseKeys): a chart that makes
// its own TLS certificates spent most of an RBAC derivation generating
// RSA keys, once per certificate in each of its renders.
type keyPool struct {
	mu    sync.Mutex
	pems  map[string]string // by genPrivateKey's type
	sprig template.FuncMap
}

// funcs are the functions that replace sprig's in the engine.
func (p *keyPool) funcs() template.FuncMap {
	p.mu.Lock()
	if p.sprig == nil {
		p.sprig = sprig.TxtFuncMap()
	}
	callSprig := func(name string, args ...any) (any, error) { return call(p.sprig[name], args...) }
	p.mu.Unlock()
	// Certificates are signed with an ECDSA key: made in microseconds,
	// and what is read of a certificate here is only that there is one.
	return template.FuncMap{
		"genPrivateKey": p.pem,
		"genCA": func(cn string, days int) (any, error) {
			return callSprig("genCAWithKey", cn, days, p.pem("ecdsa"))
		},
		"genSelfSignedCert": func(cn string, ips, alternateDNS []any, days int) (any, error) {
			return callSprig("genSelfSignedCertWithKey", cn, ips, alternateDNS, days, p.pem("ecdsa"))
		},
		"genSignedCert": func(cn string, ips, alternateDNS []any, days int, ca any) (any, error) {
			return callSprig("genSignedCertWithKey", cn, ips, alternateDNS, days, ca, p.pem("ecdsa"))
		},
	}
}

// pem is the pool's key of type typ ("rsa" when empty), PEM-encoded as
// sprig's genPrivateKey writes it.
func (p *keyPool) pem(typ string) string {
	if typ == "" {
		typ = "rsa"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.pems[typ]; ok {
		return k
	}
	k, err := newKeyPEM(typ)
	if err != nil {
		// What sprig's genPrivateKey renders for a failure or an unknown type.
		return err.Error()
	}
	if p.pems == nil {
		p.pems = map[string]string{}
	}
	p.pems[typ] = k
	return k
}

func newKeyPEM(typ string) (string, error) {
	var block *pem.Block
	switch typ {
	case "rsa":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return "", fmt.Errorf("failed to generate private key: %w", err)
		}
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}
	case "ecdsa":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", fmt.Errorf("failed to generate private key: %w", err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			return "", err
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
	case "ed25519":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return "", fmt.Errorf("failed to generate private key: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return "", err
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	default:
		// dsa and unknown types: sprig's own, once.
		return sprig.TxtFuncMap()["genPrivateKey"].(func(string) string)(typ), nil
	}
	return string(pem.EncodeToMemory(block)), nil
}

// call calls one of sprig's certificate functions: their certificate
// type is not exported, so what is handed on (a CA) is passed as it came.
func call(fn any, args ...any) (any, error) {
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		in[i] = reflect.ValueOf(a)
	}
	out := reflect.ValueOf(fn).Call(in)
	err, _ := out[1].Interface().(error)
	return out[0].Interface(), err
}
