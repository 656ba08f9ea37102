package main

import (
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
