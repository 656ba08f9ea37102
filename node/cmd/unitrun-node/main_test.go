package main

import (
	"bytes"
	debugbuildinfo "debug/buildinfo"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/unitrun/unitrun/internal/buildinfo"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// binary builds unitrun-node once for the tests of this file.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "unitrun-node-test")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "unitrun-node")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// TestVersion builds unitrun-node and checks that --version prints the
// version, the commit and the Go version recorded in the binary, and
// exits 0 without looking for a cluster or for unitrun.
func TestVersion(t *testing.T) {
	bin := binary(t)
	bi, err := debugbuildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = []string{"PATH=/nonexistent"}
	out, err := cmd.Output()
	if want := "unitrun-node " + buildinfo.From(bi).String() + "\n"; err != nil || string(out) != want {
		t.Errorf("--version: %q, %v; want %q and exit 0", out, err, want)
	}
}

// TestHelp checks that --help shows the flags in unitrun's style (two
// dashes, each flag named as before) with examples, and exits 0.
func TestHelp(t *testing.T) {
	out, err := exec.Command(binary(t), "--help").Output()
	if err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage:\n  unitrun-node [flags]", "Examples:\n  unitrun-node --kubeconfig ",
		"--kubeconfig FILE", "--node-name NAME", "--node-ip ADDRESS", "--state-dir DIR", "--unitrun COMMAND", "--manager MANAGER",
		"--image NAME=/rootfs|host", "--image-dir DIR", "--allow-privileged", "--min-restart-backoff duration", "--listen ADDRESS",
		"--tls-cert-file FILE", "--tls-key-file FILE", "--client-ca-file FILE", "default: the cluster CA the kubeconfig trusts",
		"--cluster-dns IP", "--cluster-domain DOMAIN", "--version"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "\n  -kubeconfig") {
		t.Errorf("--help shows single-dash flags:\n%s", out)
	}
}

// okKubeconfig is a kubeconfig of a cluster at an address where nothing
// listens: a node that gets past its flags fails there, exit 1.
const okKubeconfig = `apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "https://127.0.0.1:1"}}
users:
- {name: u, user: {token: t}}
contexts:
- {name: c, context: {cluster: c, user: u}}
current-context: c
`

// writeFile writes data to a new file in dir, mode perm, and returns its
// path.
func writeFile(t *testing.T, dir, name, data string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadFlags checks that what was typed wrong exits 2 with a message
// that names the flag (or $KUBECONFIG) and, for the kubeconfig, the file,
// before the node contacts anything: the kubeconfig names a cluster where
// nothing listens. (A bad --node-ip, --node-name, --manager, --unitrun,
// TLS file or a malformed or empty kubeconfig got past the flags and
// ended in exit 1 reaching for the cluster or with client-go's text; a
// missing $KUBECONFIG was blamed on --kubeconfig.)
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "admin.conf")
	ok := writeFile(t, dir, "ok.kc", okKubeconfig, 0o600)
	bad := writeFile(t, dir, "bad.kc", "this: is: not [yaml\n", 0o600)
	empty := writeFile(t, dir, "empty.kc", "", 0o600)
	plain := writeFile(t, dir, "plain", "not a program\n", 0o644)
	cert := writeFile(t, dir, "node.crt", "", 0o600)
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--kubeconfig", missing, "--unitrun", "/bin/true"}, "", "unitrun-node: --kubeconfig " + missing + ": no such file\n"},
		{[]string{"--unitrun", "/bin/true"}, "KUBECONFIG=" + missing, "unitrun-node: $KUBECONFIG " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", t.TempDir(), "--unitrun", "/bin/true"}, "", "is a directory, not a file\n"},
		{[]string{"--kubeconfig", bad, "--unitrun", "/bin/true"}, "", "unitrun-node: --kubeconfig " + bad + ": not a kubeconfig file\n"},
		{[]string{"--kubeconfig", empty, "--unitrun", "/bin/true"}, "", "unitrun-node: --kubeconfig " + empty + ": names no cluster (an empty kubeconfig)\n"},
		{[]string{"--unitrun", "/bin/true"}, "KUBECONFIG=/dev/null", "unitrun-node: $KUBECONFIG /dev/null: names no cluster (an empty kubeconfig)\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--node-ip", "notanip"}, "", `unitrun-node: --node-ip "notanip": must be an IP address such as 10.0.0.5` + "\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--node-ip", "10.0.0.300"}, "", `unitrun-node: --node-ip "10.0.0.300": must be an IP address`},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--node-name", "Bad Name"}, "", `unitrun-node: --node-name "Bad Name": is not a node name: lower case letters, digits`},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--manager", "bogus"}, "", `unitrun-node: --manager: manager "bogus": must be auto, system, user, private:PATH or embedded` + "\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true"}, "UNITRUN_MANAGER=bogus", `unitrun-node: $UNITRUN_MANAGER: manager "bogus": must be`},
		{[]string{"--kubeconfig", ok, "--unitrun", missing}, "", "unitrun-node: --unitrun " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", plain}, "", "unitrun-node: --unitrun " + plain + ": is not executable\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", dir}, "", "unitrun-node: --unitrun " + dir + ": is not a file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--tls-cert-file", cert}, "", "unitrun-node: --tls-cert-file and --tls-key-file go together: give both or neither\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--tls-cert-file", missing, "--tls-key-file", cert}, "", "unitrun-node: --tls-cert-file " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--tls-cert-file", cert, "--tls-key-file", missing}, "", "unitrun-node: --tls-key-file " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--tls-cert-file", cert, "--tls-key-file", cert, "--client-ca-file", missing}, "", "unitrun-node: --client-ca-file " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--client-ca-file", missing}, "", "unitrun-node: --client-ca-file " + missing + ": no such file\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--cluster-dns", "10.96.0.10,dns"}, "", `unitrun-node: --cluster-dns "dns": must be an IP address such as 10.96.0.10` + "\n"},
		{[]string{"--kubeconfig", ok, "--unitrun", "/bin/true", "--cluster-domain", "Cluster Local"}, "", `unitrun-node: --cluster-domain "Cluster Local": is not a DNS domain`},
		{[]string{"--image", "debian"}, "", `unitrun-node: invalid argument "debian" for "--image" flag: "debian": want NAME=host or NAME=/absolute/rootfs` + "\n"},
		{[]string{"--min-restart-backoff", "1ms"}, "", "unitrun-node: --min-restart-backoff 1ms: must be from 100ms"},
		{[]string{"--listen", "10250", "--unitrun", "/bin/true"}, "", `unitrun-node: --listen "10250": want HOST:PORT or :PORT` + "\n"},
		{[]string{"--bogus"}, "", "unitrun-node: unknown flag: --bogus\n"},
		{[]string{"extra"}, "", `unitrun-node: unknown command "extra" for "unitrun-node"` + "\n"},
	} {
		cmd := exec.Command(binary(t), tc.args...)
		cmd.Env = []string{"PATH=/nonexistent", tc.env}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s unitrun-node %s: %q, %v; want exit 2 and %q", tc.env, strings.Join(tc.args, " "), out, err, tc.want)
		}
	}
}

// TestClientRateLimits checks that the client built from a kubeconfig has
// a kubelet's rate limit, not client-go's 5 requests a second, which
// queued 20 Pods' status updates over 7 s.
func TestClientRateLimits(t *testing.T) {
	o := &options{kubeconfig: writeFile(t, t.TempDir(), "kubeconfig", okKubeconfig, 0o600)}
	if err := o.readKubeconfig(); err != nil {
		t.Fatal(err)
	}
	client, err := clientset(o.rest)
	if err != nil {
		t.Fatal(err)
	}
	if qps := client.CoreV1().RESTClient().GetRateLimiter().QPS(); qps != apiQPS {
		t.Errorf("client's rate limit: %v requests a second, want %v", qps, apiQPS)
	}
}

// TestKubeconfigRelativePaths checks that a path in the kubeconfig is
// taken relative to the kubeconfig's directory, as kubectl takes it.
func TestKubeconfigRelativePaths(t *testing.T) {
	dir := t.TempDir()
	kc := strings.Replace(okKubeconfig, `server: "https://127.0.0.1:1"`, `server: "https://127.0.0.1:1", certificate-authority: ca.crt`, 1)
	o := &options{kubeconfig: writeFile(t, dir, "kubeconfig", kc, 0o600)}
	writeFile(t, dir, "ca.crt", "", 0o600)
	t.Chdir(t.TempDir())
	if err := o.readKubeconfig(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ca.crt"); o.rest.CAFile != want {
		t.Errorf("certificate-authority: ca.crt read as %q, want %q", o.rest.CAFile, want)
	}
}

// TestClientCAFromKubeconfig checks where the kubelet API's client CA
// comes from: --client-ca-file, else the kubeconfig's
// certificate-authority-data or certificate-authority (the cluster's CA),
// else none. (Without --client-ca-file the node took none, and refused the
// API server's kubelet client certificate: kubectl logs failed on a node
// joined with the README's command.)
func TestClientCAFromKubeconfig(t *testing.T) {
	dir := t.TempDir()
	caFile, _, _, err := selfSignedCert(filepath.Join(dir, "ca"), "ca", "127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	other, _, _, err := selfSignedCert(filepath.Join(dir, "other"), "other", "127.0.0.1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherPEM, _ := os.ReadFile(other)
	withData := strings.Replace(okKubeconfig, `server: "https://127.0.0.1:1"`, `server: "https://127.0.0.1:1", certificate-authority-data: `+base64.StdEncoding.EncodeToString(pem), 1)
	withFile := strings.Replace(okKubeconfig, `server: "https://127.0.0.1:1"`, `server: "https://127.0.0.1:1", certificate-authority: `+caFile, 1)
	for _, tc := range []struct {
		name, kubeconfig, clientCA string
		want                       []byte
	}{
		{"certificate-authority-data", withData, "", pem},
		{"certificate-authority", withFile, "", pem},
		{"--client-ca-file first", withData, other, otherPEM},
		{"none", okKubeconfig, "", nil},
	} {
		o := &options{kubeconfig: writeFile(t, dir, "kubeconfig", tc.kubeconfig, 0o600), clientCA: tc.clientCA}
		if err := o.readKubeconfig(); err != nil {
			t.Fatal(err)
		}
		ca, from, err := o.clientCAContent()
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == nil && ca != nil:
			t.Errorf("%s: a client CA from %s, want none", tc.name, from)
		case tc.want != nil && (ca == nil || !bytes.Equal(ca.CurrentCABundleContent(), tc.want)):
			t.Errorf("%s: client CA %v from %q, want the CA of %s", tc.name, ca, from, tc.name)
		}
	}
}
