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
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"

	"github.com/unitrun/unitrun/node/provider"
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

func run() error {
	host, _ := os.Hostname()
	cfg := provider.Config{Images: images{}}
	var kubeconfig, listen, certFile, keyFile, clientCA string
	flag.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join")
	flag.StringVar(&cfg.NodeName, "node-name", host, "the node's name")
	flag.StringVar(&cfg.StateDir, "state-dir", "/run/unitrun", "directory of the pods' state (unitrun pod's --state-dir)")
	flag.StringVar(&cfg.Binary, "unitrun", "", "the unitrun command the pods' units call back (default: unitrun on $PATH)")
	flag.StringVar(&cfg.Manager, "manager", "", "the systemd manager to run pods on, as unitrun's --manager (default: as unitrun chooses)")
	flag.Var(images(cfg.Images), "image", "NAME=/rootfs or NAME=host: run containers of image NAME on that root filesystem or on the host's (repeatable)")
	flag.BoolVar(&cfg.AllowPrivileged, "allow-privileged", false, "let Pods run containers as root, privileged or with added capabilities")
	flag.StringVar(&listen, "listen", ":10250", "address of the kubelet API (logs), served only with --tls-cert-file and --tls-key-file")
	flag.StringVar(&certFile, "tls-cert-file", "", "TLS certificate of the kubelet API")
	flag.StringVar(&keyFile, "tls-key-file", "", "TLS key of the kubelet API")
	flag.StringVar(&clientCA, "client-ca-file", "", "CA whose client certificates the kubelet API accepts (the API server's kubelet client)")
	flag.Parse()
	if cfg.Binary == "" {
		p, err := exec.LookPath("unitrun")
		if err != nil {
			return fmt.Errorf("--unitrun: %w", err)
		}
		cfg.Binary = p
	}
	var err error
	if cfg.Binary, err = filepath.Abs(cfg.Binary); err != nil {
		return err
	}
	if cfg.StateDir, err = filepath.Abs(cfg.StateDir); err != nil {
		return err
	}
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := nodeutil.ClientsetFromEnv(kubeconfig)
	if err != nil {
		return err
	}
	spec, err := cfg.Node()
	if err != nil {
		return err
	}
	p, err := provider.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	mux := http.NewServeMux()
	opts := []nodeutil.NodeOpt{
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.NodeSpec = *spec
			c.HTTPListenAddr = listen
			c.SkipDownwardAPIResolution = true // the provider resolves fieldRef itself and refuses the rest
			return nil
		},
		nodeutil.AttachProviderRoutes(mux),
	}
	if certFile != "" || keyFile != "" {
		auth, err := webhookAuth(client, cfg.NodeName, clientCA)
		if err != nil {
			return err
		}
		opts = append(opts, nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(certFile, keyFile), func(c *tls.Config) error {
			c.ClientAuth = tls.RequestClientCert
			return nil
		}), func(c *nodeutil.NodeConfig) error {
			c.Handler = nodeutil.WithAuth(auth, mux)
			return nil
		})
	} else {
		cfg.Log.Warn("no --tls-cert-file and --tls-key-file: the kubelet API (kubectl logs) is not served")
	}
	n, err := nodeutil.NewNode(cfg.NodeName, func(nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		return p, nil, nil
	}, opts...)
	if err != nil {
		return err
	}
	cfg.Log.Info("joining the cluster", "node", cfg.NodeName)
	if err := n.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
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
