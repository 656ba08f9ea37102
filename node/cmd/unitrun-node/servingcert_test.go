package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// servingCert reads the certificate and key selfSignedCert made, and
// checks that the certificate is self-signed, ECDSA P-256, for serving,
// names exactly name and ip, and that the key is mode 0600.
func servingCert(t *testing.T, certFile, keyFile, name, ip string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("the made certificate and key: %v", err)
	}
	c := pair.Leaf
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", c.PublicKey)
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("extended key usage %v, want server auth", c.ExtKeyUsage)
	}
	if !slices.Equal(c.DNSNames, []string{name}) || len(c.IPAddresses) != 1 || !c.IPAddresses[0].Equal(net.ParseIP(ip)) {
		t.Errorf("SANs %v %v, want %s and %s", c.DNSNames, c.IPAddresses, name, ip)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: certPool(c), DNSName: name, CurrentTime: c.NotBefore}); err != nil {
		t.Errorf("does not verify for %s with itself as the CA: %v", name, err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key %s: %v, %v; want mode 0600", keyFile, fi.Mode(), err)
	}
	return c
}

func certPool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}

// TestSelfSignedCert checks the kubelet API's self-signed certificate: made
// with the node's name and IP, kept across a second start, made anew when
// the node's IP changes and when it has expired, and nothing but the
// certificate and key left in its directory.
func TestSelfSignedCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), servingCertDir)
	now := time.Now()
	certFile, keyFile, made, err := selfSignedCert(dir, "node-a", "10.0.0.5", now)
	if err != nil || !made {
		t.Fatalf("first start: made %v, %v; want a new certificate", made, err)
	}
	first := servingCert(t, certFile, keyFile, "node-a", "10.0.0.5")

	certFile, keyFile, made, err = selfSignedCert(dir, "node-a", "10.0.0.5", now.Add(time.Hour))
	if err != nil || made {
		t.Fatalf("second start, same node: made %v, %v; want the first certificate kept", made, err)
	}
	if again := servingCert(t, certFile, keyFile, "node-a", "10.0.0.5"); !again.Equal(first) {
		t.Errorf("second start: the certificate changed")
	}

	certFile, keyFile, made, err = selfSignedCert(dir, "node-a", "10.0.0.6", now.Add(time.Hour))
	if err != nil || !made {
		t.Fatalf("new --node-ip: made %v, %v; want a new certificate", made, err)
	}
	moved := servingCert(t, certFile, keyFile, "node-a", "10.0.0.6")

	certFile, keyFile, made, err = selfSignedCert(dir, "node-a", "10.0.0.6", moved.NotAfter.Add(time.Second))
	if err != nil || !made {
		t.Fatalf("expired: made %v, %v; want a new certificate", made, err)
	}
	servingCert(t, certFile, keyFile, "node-a", "10.0.0.6")

	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"serving.crt", "serving.key"}) {
		t.Errorf("%s holds %v, want serving.crt and serving.key", dir, names)
	}
}
