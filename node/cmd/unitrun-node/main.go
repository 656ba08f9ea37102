// Command unitrun-node joins a systemd host to a Kubernetes cluster as a
// node: it registers the node, keeps its lease, and runs each Pod bound to
// it as a unitrun pod (see docs/kubernetes.md).
//
//	unitrun-node --kubeconfig ~/.kube/config --unitrun /usr/local/bin/unitrun --image debian=host
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/internal/buildinfo"
	"github.com/unitrun/unitrun/manager"
	"github.com/unitrun/unitrun/node/provider"
	"github.com/unitrun/unitrun/pod"
	"github.com/unitrun/unitrun/pod/kube"
)

// Exit statuses of unitrun-node, as unitrun's own.
const (
	exitFailed = 1 // the node could not start, or stopped on an error
	exitUsage  = 2 // bad flags or arguments
)

// usageError is a bad flag or argument: unitrun-node exits 2 with it.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// addManCommand adds the hidden "unitrun-node man DIR" to a build tagged
// unitrun_man (manpage.go); it is nil in the shipped binary.
var addManCommand func(root *cobra.Command)

func main() {
	root := newRoot()
	if addManCommand != nil {
		addManCommand(root)
	}
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "unitrun-node:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(exitUsage)
		}
		os.Exit(exitFailed)
	}
}

// options is what the command line asks for.
type options struct {
	cfg        provider.Config
	kubeconfig string
	rest       *rest.Config // read from the kubeconfig by check; nil: in-cluster
	listen     string       // the kubelet API's address
	certFile   string
	keyFile    string
	clientCA   string
	version    bool // print the build's version and exit
}

// newRoot returns the command line of unitrun-node.
func newRoot() *cobra.Command {
	o := &options{cfg: provider.Config{Images: kube.Images{}}}
	cfg := &o.cfg
	root := &cobra.Command{
		Use:   "unitrun-node",
		Short: "Join this systemd host to a Kubernetes cluster as a node that runs its Pods as unitrun pods",
		Long: `unitrun-node registers this host as a node of the cluster that --kubeconfig
names, keeps its lease, and runs each Pod bound to it as a unitrun pod: one
systemd unit graph per Pod, on the manager --manager names, through the
unitrun command --unitrun names. The node carries the taint
virtual-kubelet.io/provider=unitrun:NoSchedule, so only Pods that tolerate it
land there. It serves the kubelet API (kubectl logs, port-forward) on
--listen, with the certificate --tls-cert-file and --tls-key-file name, else
with one it asks the cluster for (a kubernetes.io/kubelet-serving
CertificateSigningRequest, as a kubelet's), kept in --state-dir and renewed
before it expires, and a self-signed one until that is issued; it accepts the client
certificates of the CA --client-ca-file names, else of the cluster CA the
kubeconfig trusts (which signs the API server's kubelet client certificate on
a kubeadm cluster), so that kubectl logs and port-forward work on a fresh
join. SIGINT or SIGTERM stops it; the pods go on.

unitrun-node exits 2 for bad flags (naming the flag) and 1 when the node
could not start or stopped on an error. See docs/kubernetes.md.`,
		Example: `  unitrun-node --kubeconfig /etc/kubernetes/kubelet.conf --image debian=host
  unitrun-node --kubeconfig ~/.kube/config --unitrun /usr/local/bin/unitrun --node-ip 10.0.0.5 \
      --tls-cert-file /etc/unitrun/kubelet.crt --tls-key-file /etc/unitrun/kubelet.key --client-ca-file /etc/kubernetes/ca.crt
  unitrun-node --version`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.version {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "unitrun-node", buildinfo.Read())
				return err
			}
			if err := o.check(); err != nil {
				return usageError{err}
			}
			return o.run()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	fl := root.Flags()
	fl.SortFlags = false
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the cluster to join (default $KUBECONFIG, else the in-cluster configuration of a Pod)")
	fl.StringVar(&cfg.NodeName, "node-name", "", "the node's `NAME` (default: the host name)")
	fl.StringVar(&cfg.Address, "node-ip", "", "the node's InternalIP `ADDRESS`, where the API server reaches the kubelet API, and every Pod's hostIP and podIP (default: the host's first global IPv4 address)")
	fl.StringVar(&cfg.StateDir, "state-dir", "/run/unitrun", "`DIR` of the pods' state (unitrun pod's --state-dir)")
	fl.StringVar(&cfg.Binary, "unitrun", "", "the unitrun `COMMAND` the pods' units call back, with the exit hook beside it (COMMAND-hook) where there is one (default: unitrun on $PATH)")
	fl.StringVar(&cfg.Manager, "manager", "", "the systemd `MANAGER` to run pods on, as unitrun's --manager (default: as unitrun chooses)")
	fl.Var(kube.Images(cfg.Images), "image", "run containers of image NAME on that root filesystem, or on the host's (repeatable); an image it does not map is pulled from its registry")
	fl.StringVar(&cfg.ImageDir, "image-dir", image.DefaultDir, "`DIR` of the image store that registry images are pulled into")
	fl.BoolVar(&cfg.AllowPrivileged, "allow-privileged", false, "let Pods run containers as root, privileged or with added capabilities")
	fl.StringSliceVar(&cfg.ClusterDNS, "cluster-dns", nil, "`IP` of the cluster's DNS service, the nameserver of Pods of dnsPolicy ClusterFirst (repeatable; default none: such Pods get the host's resolver, as a kubelet without one)")
	fl.StringVar(&cfg.ClusterDomain, "cluster-domain", "", "the cluster's DNS `DOMAIN` (cluster.local), whose search domains Pods of dnsPolicy ClusterFirst get")
	fl.DurationVar(&cfg.MinRestartBackoff, "min-restart-backoff", provider.DefaultMinRestartBackoff, fmt.Sprintf("the shortest first restart delay a Pod's unitrun.io/restart-backoff may ask for, and the default (%s to %s)", pod.MinBackoff, kube.MaxRestartBackoff))
	fl.StringVar(&o.listen, "listen", ":10250", "`ADDRESS` of the kubelet API (logs, port-forward)")
	fl.StringVar(&o.certFile, "tls-cert-file", "", "TLS certificate `FILE` of the kubelet API (default: one the cluster issues for the node's kubelet-serving CSR, self-signed until then, kept in --state-dir)")
	fl.StringVar(&o.keyFile, "tls-key-file", "", "TLS key `FILE` of the kubelet API")
	fl.StringVar(&o.clientCA, "client-ca-file", "", "CA `FILE` whose client certificates the kubelet API accepts (the API server's kubelet client; default: the cluster CA the kubeconfig trusts, its certificate-authority or certificate-authority-data)")
	fl.BoolVar(&o.version, "version", false, "print the version, the commit it was built from and the Go version, and exit")
	return root
}

// run joins the cluster and serves the node until a signal stops it.
func (o *options) run() error {
	o.cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := clientset(o.rest)
	if err != nil {
		return err
	}
	o.cfg.Client = client
	spec, err := o.cfg.Node()
	if err != nil {
		return err
	}
	p, err := provider.New(ctx, o.cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.DropReplaced(ctx, client); err != nil {
		return err
	}
	opts, err := o.nodeOpts(ctx, client, spec)
	if err != nil {
		return err
	}
	opts = append(opts, nodeutil.WithPodControllerConfigOverrides(func(c *node.PodControllerConfig) error {
		c.PodClient = p.PodClient(c.PodClient)
		return nil
	}))
	n, err := nodeutil.NewNode(o.cfg.NodeName, func(nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		return p, nil, nil
	}, opts...)
	if err != nil {
		return err
	}
	o.cfg.Log.Info("joining the cluster", "node", o.cfg.NodeName, "address", o.cfg.Address, "kubelet_port", o.cfg.KubeletPort)
	if err := n.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// The API client's rate limits and the pod controller's workers, as a
// kubelet's (kubeAPIQPS, kubeAPIBurst): client-go's own 5 requests a
// second, burst 10, queued each Pod's status update about 0.2 s behind the
// one before (20 Pods Running 7 s after their containers were), and
// virtual-kubelet's one worker per CPU created Pods two at a time.
const (
	apiQPS     = 50
	apiBurst   = 100
	podWorkers = 16
)

// clientset reaches the API server as cfg says, or, if cfg is nil, as a
// Pod of the cluster does, with a kubelet's rate limits.
func clientset(cfg *rest.Config) (*kubernetes.Clientset, error) {
	if cfg == nil {
		var err error
		if cfg, err = rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("no --kubeconfig (nor $KUBECONFIG) given, and not in a cluster's Pod: %w", err)
		}
	}
	cfg.QPS, cfg.Burst = apiQPS, apiBurst
	return kubernetes.NewForConfig(cfg)
}

// nodeNameRule is what a node name must be (a DNS subdomain), in a
// user's words.
const nodeNameRule = "is not a node name: lower case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters"

// check checks every flag before anything starts or is contacted, reads
// the kubeconfig, makes the paths absolute and takes the kubelet API's
// port from --listen.
func (o *options) check() error {
	cfg := &o.cfg
	if b := cfg.MinRestartBackoff; b < pod.MinBackoff || b > kube.MaxRestartBackoff {
		return fmt.Errorf("--min-restart-backoff %s: must be from %s (the least any pod may have) to %s", b, pod.MinBackoff, kube.MaxRestartBackoff)
	}
	if err := o.readKubeconfig(); err != nil {
		return err
	}
	var err error
	if cfg.NodeName == "" {
		// As a kubelet, the host name in lower case.
		if cfg.NodeName, err = kube.HostNodeName(); err != nil {
			return fmt.Errorf("--node-name: the host name cannot be read (%w); name the node", err)
		}
		if len(validation.IsDNS1123Subdomain(cfg.NodeName)) > 0 {
			return fmt.Errorf("--node-name: the host name %q %s; name the node", cfg.NodeName, nodeNameRule)
		}
	} else if len(validation.IsDNS1123Subdomain(cfg.NodeName)) > 0 {
		return fmt.Errorf("--node-name %q: %s", cfg.NodeName, nodeNameRule)
	}
	if cfg.Address != "" && net.ParseIP(cfg.Address) == nil {
		return fmt.Errorf("--node-ip %q: must be an IP address such as 10.0.0.5", cfg.Address)
	}
	for _, ip := range cfg.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("--cluster-dns %q: must be an IP address such as 10.96.0.10", ip)
		}
	}
	if d := cfg.ClusterDomain; d != "" && len(validation.IsDNS1123Subdomain(d)) > 0 {
		return fmt.Errorf("--cluster-domain %q: is not a DNS domain: lower case letters, digits, '-' and '.', such as cluster.local", d)
	}
	if _, err := manager.ParseChoice(cfg.Manager); err != nil {
		return err
	}
	if cfg.Binary == "" {
		if cfg.Binary, err = exec.LookPath("unitrun"); err != nil {
			return fmt.Errorf("--unitrun: no unitrun on $PATH; name the unitrun command")
		}
	}
	if err := executable(cfg.Binary); err != nil {
		return fmt.Errorf("--unitrun %s: %w", cfg.Binary, err)
	}
	if cfg.Binary, err = filepath.Abs(cfg.Binary); err != nil {
		return err
	}
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return err
	}
	if cfg.ImageDir == "" {
		return fmt.Errorf("--image-dir: must name a directory")
	}
	if cfg.ImageDir, err = filepath.Abs(cfg.ImageDir); err != nil {
		return err
	}
	if err := o.checkTLS(); err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(o.listen)
	n, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT or :PORT", o.listen)
	}
	cfg.KubeletPort = int32(n)
	if cfg.Address == "" {
		cfg.Address = hostIP()
	}
	return nil
}

// readKubeconfig reads the kubeconfig that --kubeconfig, else $KUBECONFIG,
// names into o.rest; with neither it leaves o.rest nil, for the in-cluster
// configuration.
func (o *options) readKubeconfig() error {
	path, from := o.kubeconfig, "--kubeconfig"
	if path == "" {
		path, from = os.Getenv("KUBECONFIG"), "$KUBECONFIG"
	}
	if path == "" {
		return nil
	}
	if err := readable(path); err != nil {
		return fmt.Errorf("%s %s: %w", from, path, err)
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return fmt.Errorf("%s %s: not a kubeconfig file", from, path)
	}
	// Paths in it are relative to its directory.
	if err := clientcmd.ResolveLocalPaths(kc); err != nil {
		return fmt.Errorf("%s %s: %w", from, path, err)
	}
	cc := clientcmd.NewNonInteractiveClientConfig(*kc, "", &clientcmd.ConfigOverrides{}, &clientcmd.ClientConfigLoadingRules{ExplicitPath: path})
	if o.rest, err = cc.ClientConfig(); clientcmd.IsEmptyConfig(err) {
		return fmt.Errorf("%s %s: names no cluster (an empty kubeconfig)", from, path)
	} else if err != nil {
		return fmt.Errorf("%s %s: %w", from, path, err)
	}
	return nil
}

// checkTLS checks the kubelet API's files: --tls-cert-file and
// --tls-key-file together, and each of them and --client-ca-file readable.
func (o *options) checkTLS() error {
	if (o.certFile == "") != (o.keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	for _, f := range []struct{ flag, path string }{{"--tls-cert-file", o.certFile}, {"--tls-key-file", o.keyFile}, {"--client-ca-file", o.clientCA}} {
		if f.path == "" {
			continue
		}
		if err := readable(f.path); err != nil {
			return fmt.Errorf("%s %s: %w", f.flag, f.path, err)
		}
	}
	return nil
}

// readable returns why the file at path cannot be read, in a user's
// words, or nil.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fileError(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return errors.New("is a directory, not a file")
	}
	return nil
}

// executable returns why the file at path is not a program one can run,
// in a user's words, or nil.
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fileError(err)
	case !fi.Mode().IsRegular():
		return errors.New("is not a file")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}

// fileError is err of opening a file in a user's words.
func fileError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such file")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("cannot be read: permission denied")
	}
	return err
}

// hostIP is the host's first global unicast IPv4 address, or "".
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && ip.IP.IsGlobalUnicast() {
			return ip.IP.String()
		}
	}
	return ""
}

// nodeOpts configures the node: its spec, the provider's routes, and the
// kubelet API, with the certificate of --tls-cert-file and --tls-key-file
// or one the cluster issues ([options.bootstrapCert]), whose callers are
// authenticated as a kubelet authenticates them. It warns of a
// self-signed certificate and of no client CA.
func (o *options) nodeOpts(ctx context.Context, client kubernetes.Interface, spec *corev1.Node) ([]nodeutil.NodeOpt, error) {
	mux := http.NewServeMux()
	opts := []nodeutil.NodeOpt{
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.NodeSpec = *spec
			c.HTTPListenAddr = o.listen
			c.SkipDownwardAPIResolution = true // the provider resolves fieldRef itself and refuses the rest
			c.NumWorkers = podWorkers
			return nil
		},
		nodeutil.AttachProviderRoutes(mux),
	}
	keyPair := nodeutil.WithKeyPairFromPath(o.certFile, o.keyFile)
	if o.certFile == "" {
		var err error
		if keyPair, err = o.bootstrapCert(ctx, client); err != nil {
			return nil, err
		}
	}
	ca, from, err := o.clientCAContent()
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's client CA, %s: %w", from, err)
	}
	if ca == nil {
		o.cfg.Log.Warn("no --client-ca-file, and the kubeconfig names no certificate-authority: the kubelet API accepts only bearer tokens" +
			" that the API server confirms and authorizes, not the API server's own kubelet client certificate" +
			" (kube-apiserver --kubelet-client-certificate), so kubectl logs through the API server is refused;" +
			" give --client-ca-file the CA that signed that certificate")
	} else {
		o.cfg.Log.Info("the kubelet API accepts client certificates of the CA of " + from)
	}
	auth, err := webhookAuth(client, o.cfg.NodeName, ca)
	if err != nil {
		return nil, err
	}
	return append(opts, nodeutil.WithTLSConfig(keyPair, func(c *tls.Config) error {
		c.ClientAuth = tls.RequestClientCert
		return nil
	}), func(c *nodeutil.NodeConfig) error {
		c.Handler = nodeutil.WithAuth(auth, kubeletLogErrors(mux))
		return nil
	}), nil
}

// bootstrapCert is the kubelet API's certificate without --tls-cert-file:
// the one the API issues for the node's kubernetes.io/kubelet-serving
// CertificateSigningRequest, renewed before it expires ([issuedCert]),
// and until it is issued, if it is not within servingCertWait, a
// self-signed one, with a warning.
func (o *options) bootstrapCert(ctx context.Context, client kubernetes.Interface) (func(*tls.Config) error, error) {
	dir := filepath.Join(o.cfg.StateDir, servingCertDir)
	certFile, keyFile, made, err := selfSignedCert(dir, o.cfg.NodeName, o.cfg.Address, time.Now())
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's self-signed certificate: %w", err)
	}
	fallback, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's self-signed certificate: %w", err)
	}
	sc, issued, err := newIssuedCert(ctx, client, dir, o.cfg.NodeName, o.cfg.Address, &fallback, servingCertWait)
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's serving certificate: %w", err)
	}
	if issued {
		o.cfg.Log.Info("the kubelet API serves the certificate the cluster issued for its kubelet-serving CertificateSigningRequest", "dir", dir)
	} else {
		o.cfg.Log.Warn("no --tls-cert-file and --tls-key-file, and the node's kubernetes.io/kubelet-serving CertificateSigningRequest"+
			" was not issued within "+servingCertWait.String()+": the kubelet API (kubectl logs, exec, port-forward) serves a self-signed"+
			" certificate until it is (approve it: kubectl certificate approve; kube-controller-manager does not approve these itself);"+
			" kube-apiserver reaches it meanwhile only without --kubelet-certificate-authority", "cert", certFile, "new", made)
	}
	return func(c *tls.Config) error {
		c.GetCertificate = sc.get
		return nil
	}, nil
}

// clientCAContent is the CA whose client certificates the kubelet API
// accepts, and where it comes from: --client-ca-file's, else the cluster's
// CA that the kubeconfig trusts (certificate-authority or
// certificate-authority-data), which on a kubeadm cluster, as on most,
// also signs kube-apiserver's kubelet client certificate; nil with
// neither (the in-cluster configuration included).
func (o *options) clientCAContent() (ca dynamiccertificates.CAContentProvider, from string, err error) {
	switch {
	case o.clientCA != "":
		from = "--client-ca-file " + o.clientCA
		ca, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca", o.clientCA)
	case o.rest != nil && len(o.rest.CAData) > 0:
		from = "the kubeconfig's certificate-authority-data"
		ca, err = dynamiccertificates.NewStaticCAContent("client-ca", o.rest.CAData)
	case o.rest != nil && o.rest.CAFile != "":
		from = "the kubeconfig's certificate-authority " + o.rest.CAFile
		ca, err = dynamiccertificates.NewDynamicCAContentFromFile("client-ca", o.rest.CAFile)
	}
	return ca, from, err
}

// webhookAuth authenticates the kubelet API's callers as a kubelet does:
// client certificates of ca (none if nil), and bearer tokens through the
// API server, which also authorizes each request.
func webhookAuth(client kubernetes.Interface, nodeName string, ca dynamiccertificates.CAContentProvider) (nodeutil.Auth, error) {
	return nodeutil.WebhookAuth(client, nodeName, func(c *nodeutil.WebhookAuthConfig) error {
		if ca != nil {
			c.AuthnConfig.ClientCertificateCAContentProvider = ca
		}
		return nil
	})
}
