// Package testca is a certificate authority for the node's tests: it
// signs serving certificates as a cluster's kubelet-serving signer would.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

// New returns a CA named name (ECDSA P-256, valid from an hour ago for a
// day) and its key.
func New(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// Issue returns the DER of the serving certificate ca (of key) issues
// for req: its subject, its SANs and its key, server auth, valid from now
// for life.
func Issue(t testing.TB, ca *x509.Certificate, key *ecdsa.PrivateKey, req *x509.CertificateRequest, life time.Duration) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: req.Subject,
		NotBefore: time.Now(), NotAfter: time.Now().Add(life),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, req.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// serial is a random serial number.
func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
