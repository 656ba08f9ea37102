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
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unitrun/unitrun/internal/buildinfo"
	"github.com/unitrun/unitrun/node/provider"
	"github.com/unitrun/unitrun/pod"
)

// images is the repeated --image NAME=ROOTFS|host flag.
type images map[string]string

func (m images) String() string { return fmt.Sprint(map[string]string(m)) }

func (m images) Set(s string) error {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || (dir != provider.HostImage && !filepath.IsAbs(dir)) {
		return fmt.Errorf("%q: want NAME=host or NAME=/absolute/rootfs", s)
	}
	m[name] = dir
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "unitrun-node:", err)
		os.Exit(1)
	}
}

// options is what the command line asks for.
type options struct {
	cfg        provider.Config
	kubeconfig string
	listen     string // the kubelet API's address
	certFile   string
	keyFile    string
	clientCA   string
	version    bool // print the build's version and exit
}

func run() error {
	o, err := parseFlags()
	if err != nil {
		return err
	}
	if o.version {
		_, err := fmt.Println("unitrun-node", buildinfo.Read())
		return err
	}
	o.cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := clientset(o.kubeconfig)
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
	opts, err := o.nodeOpts(client, spec)
	if err != nil {
		return err
	}
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

// clientset reaches the API server as kubeconfig says, or as a Pod of the
// cluster does if kubeconfig is "" or does not exist.
func clientset(kubeconfig string) (*kubernetes.Clientset, error) {
	var cfg *rest.Config
	var err error
	if _, serr := os.Stat(kubeconfig); kubeconfig == "" || errors.Is(serr, os.ErrNotExist) {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = apiQPS, apiBurst
	return kubernetes.NewForConfig(cfg)
}

// parseFlags reads the command line, with the paths made absolute and
// the kubelet API's port taken from --listen.
func parseFlags() (*options, error) {
	host, _ := os.Hostname()
	o := &options{cfg: provider.Config{Images: images{}}}
	cfg := &o.cfg
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join")
	flag.StringVar(&cfg.NodeName, "node-name", host, "the node's name")
	flag.StringVar(&cfg.Address, "node-ip", "", "the node's InternalIP, where the API server reaches the kubelet API, and every Pod's hostIP and podIP (default: the host's first global IPv4 address)")
	flag.StringVar(&cfg.StateDir, "state-dir", "/run/unitrun", "directory of the pods' state (unitrun pod's --state-dir)")
	flag.StringVar(&cfg.Binary, "unitrun", "", "the unitrun command the pods' units call back (default: unitrun on $PATH)")
	flag.StringVar(&cfg.Manager, "manager", "", "the systemd manager to run pods on, as unitrun's --manager (default: as unitrun chooses)")
	flag.Var(images(cfg.Images), "image", "NAME=/rootfs or NAME=host: run containers of image NAME on that root filesystem or on the host's (repeatable)")
	flag.BoolVar(&cfg.AllowPrivileged, "allow-privileged", false, "let Pods run containers as root, privileged or with added capabilities")
	flag.DurationVar(&cfg.MinRestartBackoff, "min-restart-backoff", provider.DefaultMinRestartBackoff, fmt.Sprintf("the shortest first restart delay a Pod's unitrun.io/restart-backoff may ask for, and the default (%s to %s)", pod.MinBackoff, provider.MaxRestartBackoff))
	flag.StringVar(&o.listen, "listen", ":10250", "address of the kubelet API (logs), served only with --tls-cert-file and --tls-key-file")
	flag.StringVar(&o.certFile, "tls-cert-file", "", "TLS certificate of the kubelet API")
	flag.StringVar(&o.keyFile, "tls-key-file", "", "TLS key of the kubelet API")
	flag.StringVar(&o.clientCA, "client-ca-file", "", "CA whose client certificates the kubelet API accepts (the API server's kubelet client)")
	flag.BoolVar(&o.version, "version", false, "print the version, the commit it was built from and the Go version, and exit")
	flag.Parse()
	if o.version {
		return o, nil
	}
	if b := cfg.MinRestartBackoff; b < pod.MinBackoff || b > provider.MaxRestartBackoff {
		return nil, fmt.Errorf("--min-restart-backoff %s: must be from %s (the least any pod may have) to %s", b, pod.MinBackoff, provider.MaxRestartBackoff)
	}
	var err error
	if cfg.Binary == "" {
		if cfg.Binary, err = exec.LookPath("unitrun"); err != nil {
			return nil, fmt.Errorf("--unitrun: %w", err)
		}
	}
	if cfg.Binary, err = filepath.Abs(cfg.Binary); err != nil {
		return nil, err
	}
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(o.listen)
	n, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT or :PORT", o.listen)
	}
	cfg.KubeletPort = int32(n)
	if cfg.Address == "" {
		cfg.Address = hostIP()
	}
	return o, nil
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

// nodeOpts configures the node: its spec, the provider's routes, and
// with a certificate the kubelet API, whose callers are authenticated as
// a kubelet authenticates them.
func (o *options) nodeOpts(client kubernetes.Interface, spec *corev1.Node) ([]nodeutil.NodeOpt, error) {
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
	if o.certFile == "" && o.keyFile == "" {
		o.cfg.Log.Warn("no --tls-cert-file and --tls-key-file: the kubelet API (kubectl logs) is not served")
		return opts, nil
	}
	auth, err := webhookAuth(client, o.cfg.NodeName, o.clientCA)
	if err != nil {
		return nil, err
	}
	return append(opts, nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(o.certFile, o.keyFile), func(c *tls.Config) error {
		c.ClientAuth = tls.RequestClientCert
		return nil
	}), func(c *nodeutil.NodeConfig) error {
		c.Handler = nodeutil.WithAuth(auth, mux)
		return nil
	}), nil
}

// webhookAuth authenticates the kubelet API's callers as a kubelet does:
// client certificates of clientCA, and bearer tokens through the API
// server, which also authorizes each request.
func webhookAuth(client kubernetes.Interface, nodeName, clientCA string) (nodeutil.Auth, error) {
	return nodeutil.WebhookAuth(client, nodeName, func(c *nodeutil.WebhookAuthConfig) error {
		if clientCA == "" {
			return nil
		}
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", clientCA)
		if err != nil {
			return err
		}
		c.AuthnConfig.ClientCertificateCAContentProvider = ca
		return nil
	})
}
