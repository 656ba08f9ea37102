package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/unitrun/unitrun/node/internal/testca"
)

// Without --tls-cert-file, the node asks the API for its serving
// certificate as a kubelet does: a kubelet-serving CSR for
// system:node:NAME in system:nodes, with its name and IP; once the CSR is
// approved and signed, the kubelet API serves the certificate, which
// verifies against the signing CA for the node's IP.
func TestIssuedCert(t *testing.T) {
	s, ca := issuedBy(t, 24*time.Hour)
	c, err := s.get(nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "10.0.0.5"}); err != nil {
		t.Errorf("the served certificate does not verify for 10.0.0.5 against the CA: %v", err)
	}
}

// The issued certificate is renewed before it expires: a new CSR, whose
// certificate the kubelet API then serves.
func TestIssuedCertRenewed(t *testing.T) {
	// Renewed at 70 to 90 % of its life, as the kubelet's.
	s, _ := issuedBy(t, 20*time.Second)
	first, _ := s.get(nil)
	for {
		c, _ := s.get(nil)
		if c == nil {
			t.Fatalf("the certificate expired at %v without being renewed", first.Leaf.NotAfter)
		}
		if c.Leaf.SerialNumber.Cmp(first.Leaf.SerialNumber) != 0 {
			if !c.Leaf.NotAfter.After(first.Leaf.NotAfter) {
				t.Errorf("renewed certificate ends %v, want after the first's %v", c.Leaf.NotAfter, first.Leaf.NotAfter)
			}
			break
		}
		if time.Now().After(first.Leaf.NotAfter) {
			t.Fatalf("the certificate expired at %v without being renewed", first.Leaf.NotAfter)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// issuedBy is the serving certificate of node node-a at 10.0.0.5, once a
// CA, which it returns, has issued it for life, as it issues every one
// the node asks for until the test ends.
func issuedBy(t *testing.T, life time.Duration) (*issuedCert, *x509.Certificate) {
	client := csrClient()
	ca, caKey := testca.New(t, "test CA")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go signCSRs(ctx, t, client, ca, caKey, life)
	s, issued, err := newIssuedCert(ctx, client, filepath.Join(t.TempDir(), servingCertDir), "node-a", "10.0.0.5", nil, time.Minute)
	if err != nil || !issued {
		t.Fatalf("issued %v, %v; want the certificate issued", issued, err)
	}
	return s, ca
}

// A CSR nobody approves leaves the kubelet API on its self-signed
// certificate once the wait is over.
func TestIssuedCertFallback(t *testing.T) {
	client := csrClient()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fallback := &tls.Certificate{}
	s, issued, err := newIssuedCert(ctx, client, filepath.Join(t.TempDir(), servingCertDir), "node-a", "10.0.0.5", fallback, 200*time.Millisecond)
	if err != nil || issued {
		t.Fatalf("issued %v, %v; want none issued", issued, err)
	}
	if c, err := s.get(nil); c != fallback || err != nil {
		t.Errorf("served %v, %v; want the fallback", c, err)
	}
}

// csrClient is a fake API that names a CSR created with a generateName,
// as the API server does.
func csrClient() *fake.Clientset {
	client := fake.NewClientset()
	n := 0
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if r := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest); r.Name == "" {
			n++
			r.Name = fmt.Sprintf("%s%d", r.GenerateName, n)
		}
		return false, nil, nil
	})
	// The API server lists and watches one CSR by its name; the fake API
	// does not filter.
	client.PrependReactor("list", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name, ok := a.(k8stesting.ListActionImpl).ListRestrictions.Fields.RequiresExactMatch("metadata.name")
		if !ok {
			return false, nil, nil
		}
		all, err := client.Tracker().List(certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"),
			certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "")
		if err != nil {
			return true, nil, err
		}
		list := all.(*certificatesv1.CertificateSigningRequestList)
		list.Items = slices.DeleteFunc(list.Items, func(r certificatesv1.CertificateSigningRequest) bool { return r.Name != name })
		return true, list, nil
	})
	client.PrependWatchReactor("certificatesigningrequests", func(a k8stesting.Action) (bool, watch.Interface, error) {
		name, _ := a.(k8stesting.WatchActionImpl).WatchRestrictions.Fields.RequiresExactMatch("metadata.name")
		w, err := client.Tracker().Watch(certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), "")
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			r, ok := e.Object.(*certificatesv1.CertificateSigningRequest)
			return e, ok && (name == "" || r.Name == name)
		}), nil
	})
	return client
}

// signCSRs approves and signs with ca, for life, every kubelet-serving
// CSR of client that asks for what a kubelet asks for, as
// kube-controller-manager's approver and signer would, until ctx ends.
func signCSRs(ctx context.Context, t *testing.T, client *fake.Clientset, ca *x509.Certificate, caKey *ecdsa.PrivateKey, life time.Duration) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	for ctx.Err() == nil {
		list, err := csrs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, r := range list.Items {
			if len(r.Status.Certificate) > 0 {
				continue
			}
			block, _ := pem.Decode(r.Spec.Request)
			req, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				t.Errorf("CSR %s: %v", r.Name, err)
				return
			}
			if r.Spec.SignerName != certificatesv1.KubeletServingSignerName || req.Subject.CommonName != "system:node:node-a" ||
				!slices.Equal(req.Subject.Organization, []string{"system:nodes"}) || !slices.Equal(req.DNSNames, []string{"node-a"}) ||
				len(req.IPAddresses) != 1 || !req.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) ||
				!slices.Equal(r.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}) {
				t.Errorf("CSR %s asks for %s %v %v %v %v of %s; want a kubelet's", r.Name, req.Subject.CommonName, req.Subject.Organization, req.DNSNames, req.IPAddresses, r.Spec.Usages, r.Spec.SignerName)
				return
			}
			der := testca.Issue(t, ca, caKey, req, life)
			r.Status.Conditions = append(r.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"})
			r.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
			if _, err := csrs.UpdateStatus(ctx, &r, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
