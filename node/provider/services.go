package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// services keeps the cluster's Services, from which a container's service
// variables come.
type services struct {
	lister corev1listers.ServiceLister
	synced cache.InformerSynced
}

// watchServices starts an informer of the Services cfg.Client reaches,
// until ctx ends; nil without a client.
func watchServices(ctx context.Context, cfg Config) *services {
	if cfg.Client == nil {
		return nil
	}
	f := informers.NewSharedInformerFactory(cfg.Client, 0)
	inf := f.Core().V1().Services()
	s := &services{lister: inf.Lister(), synced: inf.Informer().HasSynced}
	f.Start(ctx.Done())
	return s
}

// env returns the service variables of Pod p's containers, as the kubelet
// sets them: those of the master Service, kubernetes in the default
// namespace, and, unless the Pod turns enableServiceLinks off, of every
// Service of the Pod's namespace that has a cluster IP.
func (s *services) env(ctx context.Context, p *corev1.Pod) (map[string]string, error) {
	env := map[string]string{}
	if s == nil {
		return env, nil
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.synced) {
		return nil, fmt.Errorf("list the services for pod %s: %w", key(p.Namespace, p.Name), ctx.Err())
	}
	all, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list the services for pod %s: %w", key(p.Namespace, p.Name), err)
	}
	links := p.Spec.EnableServiceLinks == nil || *p.Spec.EnableServiceLinks
	for _, svc := range all {
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
			continue
		}
		master := svc.Namespace == metav1.NamespaceDefault && svc.Name == "kubernetes"
		if !master && (svc.Namespace != p.Namespace || !links) {
			continue
		}
		serviceVars(svc, env)
	}
	return env, nil
}

// serviceVars adds svc's variables to env: NAME_SERVICE_HOST,
// NAME_SERVICE_PORT (the first port) and NAME_SERVICE_PORT_PORTNAME, and
// Docker's link variables, NAME_PORT and NAME_PORT_N_PROTO with _PROTO,
// _PORT and _ADDR.
func serviceVars(svc *corev1.Service, env map[string]string) {
	name := envName(svc.Name)
	ip := svc.Spec.ClusterIP
	env[name+"_SERVICE_HOST"] = ip
	env[name+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
	for i, sp := range svc.Spec.Ports {
		port := strconv.Itoa(int(sp.Port))
		if sp.Name != "" {
			env[name+"_SERVICE_PORT_"+envName(sp.Name)] = port
		}
		proto := string(sp.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env[name+"_PORT"] = url
		}
		prefix := name + "_PORT_" + port + "_" + strings.ToUpper(proto)
		env[prefix] = url
		env[prefix+"_PROTO"] = strings.ToLower(proto)
		env[prefix+"_PORT"] = port
		env[prefix+"_ADDR"] = ip
	}
}

// envName is the variable name of a Service or port name: upper case, '-'
// as '_'.
func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
