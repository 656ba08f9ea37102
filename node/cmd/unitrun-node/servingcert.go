package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/unitrun/unitrun/internal/atomicfile"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// servingCertDir is the directory, in the state dir, of the kubelet API's
// self-signed serving certificate (serving.crt) and its key (serving.key).
const servingCertDir = "node-tls"

// servingCertLife is how long a self-signed serving certificate is valid,
// as a kubelet's own.
const servingCertLife = 365 * 24 * time.Hour

// selfSignedCert returns the files of a self-signed serving certificate of
// the kubelet API for the node name at ip ("": none) in dir, and whether
// it made them: the ones already there if they match (the key the
// certificate's), are valid at now and name exactly name and ip, else new
// ones (ECDSA P-256), each written atomically, the key mode 0600.
func selfSignedCert(dir, name, ip string, now time.Time) (certFile, keyFile string, made bool, err error) {
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	var ips []net.IP
	if ip != "" {
		ips = []net.IP{net.ParseIP(ip)}
	}
	if pair, err := tls.LoadX509KeyPair(certFile, keyFile); err == nil {
		c := pair.Leaf
		if !now.Before(c.NotBefore) && now.Before(c.NotAfter) && slices.Equal(c.DNSNames, []string{name}) &&
			slices.EqualFunc(c.IPAddresses, ips, net.IP.Equal) {
			return certFile, keyFile, false, nil
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", false, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return "", "", false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now,
		NotAfter:              now.Add(servingCertLife),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{name},
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", false, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", false, err
	}
	// The key first: a crash between the two leaves a pair that does not
	// match, made anew at the next start.
	if err := atomicfile.Write(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", false, err
	}
	if err := atomicfile.Write(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", false, err
	}
	return certFile, keyFile, true, nil
}

// servingCertWait is how long the node waits at its start for the API to
// issue the serving certificate it asked for, before it serves a
// self-signed one until it is issued.
const servingCertWait = 15 * time.Second

// issuedCert is the kubelet API's certificate, bootstrapped as a
// kubelet's (serverTLSBootstrap): a key of its own and a
// CertificateSigningRequest of signer kubernetes.io/kubelet-serving for
// CN system:node:NAME, O system:nodes and the node's name and IP as SANs,
// through client-go's certificate manager, which the kubelet uses too: it
// keeps the issued certificate and its key in dir (across restarts) and
// asks for the next one at 70 to 90 % of its life. Until one is issued,
// it serves fallback, a self-signed certificate.
type issuedCert struct {
	m        certificate.Manager
	fallback *tls.Certificate
}

// newIssuedCert starts asking for the kubelet API's certificate of node
// name at ip ("": none) through client, kept in dir, served until it is
// issued as fallback, and waits up to wait for it to be issued; it
// reports whether it was.
func newIssuedCert(ctx context.Context, client kubernetes.Interface, dir, name, ip string, fallback *tls.Certificate, wait time.Duration) (*issuedCert, bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	store, err := certificate.NewFileStore("kubelet-server", dir, dir, "", "")
	if err != nil {
		return nil, false, err
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		DNSNames: []string{name},
	}
	if ip != "" {
		tmpl.IPAddresses = []net.IP{net.ParseIP(ip)}
	}
	m, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		Template:    tmpl,
		SignerName:  certificatesv1.KubeletServingSignerName,
		// ECDSA keys: no key encipherment, as the kubelet asks.
		Usages:           []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		CertificateStore: store,
		Name:             "kubelet-serving",
		Ctx:              &ctx,
	})
	if err != nil {
		return nil, false, err
	}
	m.Start()
	s := &issuedCert{m: m, fallback: fallback}
	deadline := time.Now().Add(wait)
	for m.Current() == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	return s, m.Current() != nil, nil
}

// get is the tls.Config's GetCertificate: the issued certificate, else
// the fallback.
func (s *issuedCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := s.m.Current(); c != nil {
		return c, nil
	}
	return s.fallback, nil
}
