package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/unitrun/unitrun/pod/kube"
)

// Config is what a node needs to run Pods.
type Config struct {
	// NodeName is the node's name in the cluster.
	NodeName string
	// Images maps an image name, exactly as Pods spell it, to the
	// absolute path of a root filesystem or to HostImage. An image it
	// does not map is a registry image, pulled into ImageDir.
	Images map[string]string
	// ImageDir is the image store that registry images are pulled into;
	// "" is image.DefaultDir.
	ImageDir string
	// AllowPrivileged lets Pods run containers as root on the host, or
	// privileged, or with added capabilities.
	AllowPrivileged bool
	// StateDir holds the unitrun pods' state (as unitrun pod's --state-dir)
	// and, in StateDir/node, the Pods this node runs.
	StateDir string
	// Binary is the absolute path of the unitrun command, which the pods'
	// units call back; at each exit of an app they run the exit hook
	// beside it instead (pod.HookPath), where there is one.
	Binary string
	// Manager is the systemd manager to run on, as unitrun's --manager
	// takes it; "" chooses as unitrun does.
	Manager string
	// Address is the node's InternalIP, where the API server reaches
	// the kubelet API (kubectl logs), and every Pod's host and pod IP
	// (its pods have the host's network); "" reports none.
	Address string
	// ClusterDNS are the cluster's DNS servers, the nameservers of a Pod
	// of dnsPolicy ClusterFirst (the kubelet's clusterDNS); none: such a
	// Pod gets the host's resolver configuration, as under Default.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain, whose search domains a
	// Pod of dnsPolicy ClusterFirst gets before the host's ("": none).
	ClusterDomain string
	// KubeletPort is the port of the kubelet API on Address.
	KubeletPort int32
	// Client reaches the API server: for the Services whose variables
	// the containers get, and to remove a deleted Pod once its containers
	// have ended, as the kubelet does. nil gives the containers no
	// service variables, and leaves a deleted Pod for virtual-kubelet to
	// remove at the end of its grace period.
	Client kubernetes.Interface
	// Log receives what the provider does; nil discards it.
	Log *slog.Logger
	// Poll is how often the provider reads the status of every pod to
	// report changes, besides reading a pod's whenever its records change
	// (for what no record says, such as a deadline passed); 0 means one
	// second.
	Poll time.Duration
	// MinRestartBackoff is the node operator's floor on a container's
	// first restart delay: a Pod's unitrun.io/restart-backoff below it is
	// refused, and a Pod without it gets it; it is also the first wait
	// after a failed image pull. 0 means the kubelet's 10s.
	// It may not be below what plain pods allow (pod.MinBackoff).
	MinRestartBackoff time.Duration
}

// DefaultMinRestartBackoff is the kubelet's restart back-off: a Pod author
// has no way under it. A Config's MinRestartBackoff of 0 is it.
const DefaultMinRestartBackoff = kube.DefaultMinRestartBackoff

// A Provider runs the Pods bound to its node as unitrun pods. It
// implements virtual-kubelet's PodLifecycleHandler, PodNotifier and
// container logs.
type Provider struct {
	cfg  Config
	eng  *engine
	svcs *services
	dir  string // StateDir/node: one record per Pod
	log  *slog.Logger
	poll time.Duration

	mu     sync.Mutex
	pods   map[string]*entry // by namespace/name
	notify func(*corev1.Pod)
	watch  *fsnotify.Watcher // the pods' records ([Provider.watchRecords]); nil if not watched
	// sending serializes sendStatus, so that a status read before another
	// is never sent after it.
	sending sync.Mutex
}

// An entry is one Pod the provider has taken on.
type entry struct {
	pod     *corev1.Pod
	name    string // the unitrun pod's
	refused error  // why the Pod cannot run here; nil if it runs
	// waiting is what the Pod needs from the API before it can run
	// (a waitError); the provider tries again every Poll.
	waiting error
	// pull is why an image of the Pod could not be pulled; the provider
	// pulls again after a back-off ([Provider.retryPull]).
	pull *pullFailure
	// tokens and volumes are those last written into the Pod's volumes;
	// nil for a Pod adopted, whose volumes are rewritten at the first
	// refresh.
	tokens  map[string]token
	volumes map[string]*volume
	at      time.Time
	sent    *corev1.PodStatus // the status last notified
	final   *podState         // the status read before the unitrun pod was removed
	// stopping says the unitrun pod is being stopped at the Pod's
	// activeDeadlineSeconds, or evicted.
	stopping bool
	// eviction is why the Pod is evicted ("" while it is not), and
	// measured when its emptyDirs' usage was last measured.
	eviction string
	measured time.Time
	// deleting says a deletion of the Pod is under way.
	deleting bool
	// warned holds what the container events recorded, by app/kind (a
	// probe's warning, the exit a BackOff follows).
	warned map[string]string
}

// New opens the manager and returns a provider that has adopted the pods
// that an earlier provider left in cfg.StateDir.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if !filepath.IsAbs(cfg.StateDir) || !filepath.IsAbs(cfg.Binary) {
		return nil, fmt.Errorf("state dir %q and unitrun binary %q must be absolute paths", cfg.StateDir, cfg.Binary)
	}
	e, err := openEngine(ctx, cfg.Manager, cfg.StateDir, cfg.Binary)
	if err != nil {
		return nil, err
	}
	p, err := newProvider(ctx, cfg, e)
	if err != nil {
		e.close()
		return nil, err
	}
	return p, nil
}

func newProvider(ctx context.Context, cfg Config, e *engine) (*Provider, error) {
	p := &Provider{cfg: cfg, eng: e, svcs: watchServices(ctx, cfg), dir: filepath.Join(cfg.StateDir, "node"), log: cfg.Log, poll: cfg.Poll, pods: map[string]*entry{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.poll == 0 {
		p.poll = time.Second
	}
	e.r.ImageDir = cfg.imageDir()
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, err
	}
	if err := p.adopt(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Close releases the connection to the manager. The pods keep running.
func (p *Provider) Close() error { return p.eng.close() }

func key(namespace, name string) string { return namespace + "/" + name }

func (p *Provider) record(name string) string { return filepath.Join(p.dir, name+".json") }

// adopt takes on the pods an earlier provider recorded: a Pod whose
// unitrun pod exists is reported again (and started, if it was created
// but not started); a record without its pod is dropped, so that the Pod
// is created once more if it still exists; a pod of this provider's
// naming without a record, which a removal cut short left, is removed.
func (p *Provider) adopt(ctx context.Context) error {
	recs, err := os.ReadDir(p.dir)
	if err != nil {
		return err
	}
	recorded := map[string]bool{}
	for _, r := range recs {
		name, ok := strings.CutSuffix(r.Name(), ".json")
		if !ok || !strings.HasPrefix(name, podPrefix) {
			continue
		}
		data, err := os.ReadFile(p.record(name))
		if err != nil {
			return err
		}
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return fmt.Errorf("%s: %w", p.record(name), err)
		}
		if !p.eng.exists(name) {
			os.Remove(p.record(name))
			continue
		}
		p.start(ctx, key(pod.Namespace, pod.Name), name)
		recorded[name] = true
		p.pods[key(pod.Namespace, pod.Name)] = &entry{pod: &pod, name: name}
		p.log.Info("adopted", "pod", key(pod.Namespace, pod.Name), "unitrun_pod", name)
	}
	names, err := p.eng.names()
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.HasPrefix(name, podPrefix) && !recorded[name] {
			p.log.Info("removing a pod without a record", "unitrun_pod", name)
			if _, _, err := p.eng.stop(ctx, name, 0); err != nil {
				return err
			}
			if err := p.eng.remove(ctx, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// DropReplaced removes each adopted pod whose Pod is no longer bound to
// the node, or was deleted and created again under its name while no
// provider ran, as DeletePod does. It lists the Pods bound to the node
// through client. Call it after New and before the pod controller starts:
// virtual-kubelet matches the Pods it is given by name, so it would take a
// new Pod for the one it replaced, report the old one's statuses as the
// new one's and never create it.
func (p *Provider) DropReplaced(ctx context.Context, client kubernetes.Interface) error {
	list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + p.cfg.NodeName})
	if err != nil {
		return fmt.Errorf("list the pods bound to node %s: %w", p.cfg.NodeName, err)
	}
	bound := map[string]types.UID{}
	for _, pod := range list.Items {
		bound[key(pod.Namespace, pod.Name)] = pod.UID
	}
	var gone []*entry
	p.mu.Lock()
	for k, e := range p.pods {
		if uid, ok := bound[k]; !ok || uid != e.pod.UID {
			e.deleting = true
			gone = append(gone, e)
		}
	}
	p.mu.Unlock()
	for _, e := range gone {
		p.log.Info("removing a pod deleted while no provider ran", "pod", key(e.pod.Namespace, e.pod.Name), "uid", e.pod.UID)
		if err := p.delete(ctx, e.pod, e, false); err != nil {
			return err
		}
	}
	return nil
}

// CreatePod runs pod as a unitrun pod. A Pod it cannot run fully is
// not run: it fails with a reason that names each field. A Pod it runs
// already is left as it is.
func (p *Provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	e := p.lookup(k)
	p.mu.Lock()
	again := e != nil && e.pod.UID == pod.UID
	pulls := again && e.pull != nil
	if again && e.waiting == nil && (e.pull == nil || !e.pull.retry) {
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	name := podName(pod.Namespace, pod.Name, string(pod.UID))
	prev := e
	at, failures := time.Now(), 0
	if again {
		at = e.at
	}
	if pulls {
		failures = e.pull.failures
	}
	e = &entry{pod: pod.DeepCopy(), name: name, at: at}
	in, err := p.fetch(ctx, pod, nil)
	if err != nil {
		return err
	}
	manifest, err := p.cfg.translate(pod, in)
	if w := (waitError{}); errors.As(err, &w) {
		e.waiting = err
		p.log.Info("waiting", "pod", k, "for", err)
		p.put(k, e)
		p.retry(ctx, k, e)
		return nil
	}
	if err == nil {
		if err = p.eng.check(manifest); err != nil {
			err = containerPaths(pod, err)
		}
	}
	if err != nil {
		e.refused = err
		p.log.Info("refused", "pod", k, "reason", err)
		p.put(k, e)
		// As the kubelet records the Pods it rejects, for kubectl
		// describe.
		if p.cfg.Client != nil {
			if err := p.event(ctx, pod, "", corev1.EventTypeWarning, "Unsupported", refusedMessage(e.refused)); err != nil {
				p.log.Warn("cannot record the refusal", "pod", k, "err", err)
			}
		}
		return nil
	}
	if !p.eng.exists(name) {
		f, err := p.pullImages(ctx, pod, manifest)
		if err != nil {
			return err
		}
		if f != nil {
			f.failures = failures + 1
			e.pull = f
			p.log.Info("image pull failed", "pod", k, "image", f.ref, "reason", f.reason, "err", f.message)
			if !p.putAgain(k, prev, e) {
				return nil
			}
			p.retryPull(ctx, k, e)
			return nil
		}
	}
	data, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	if err := writeFile(p.record(name), data); err != nil {
		return err
	}
	if err := p.eng.create(ctx, name, manifest); err != nil && !errors.Is(err, errExists) {
		// Nothing of it may stay: the next try starts afresh.
		p.eng.remove(ctx, name)
		os.Remove(p.record(name))
		return fmt.Errorf("create unitrun pod %s: %w", name, err)
	}
	err = writeVolumes(in.volumes)
	if err == nil {
		err = p.eng.mountTmpfs(ctx, in.volumes)
	}
	if err != nil {
		p.eng.remove(ctx, name)
		os.Remove(p.record(name))
		return fmt.Errorf("write the volumes of unitrun pod %s: %w", name, err)
	}
	p.log.Info("created", "pod", k, "unitrun_pod", name, "took", time.Since(e.at), "began_after_asked", e.at.Sub(pod.CreationTimestamp.Time).Round(time.Millisecond))
	if msg := p.cfg.missingClusterDNS(pod); msg != "" && p.cfg.Client != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := p.event(ctx, pod, "", corev1.EventTypeWarning, "MissingClusterDNS", msg); err != nil {
				p.log.Warn("cannot record the MissingClusterDNS event", "pod", k, "err", err)
			}
		}()
	}
	e.tokens, e.volumes = in.tokens, in.volumes
	p.put(k, e)
	p.start(ctx, k, name)
	return nil
}

// retry creates the Pod of entry e, which waits, again after Poll, unless
// the entry has been replaced or deleted by then.
func (p *Provider) retry(ctx context.Context, k string, e *entry) {
	ctx = context.WithoutCancel(ctx)
	time.AfterFunc(p.poll, func() {
		p.mu.Lock()
		current, pod := p.pods[k] == e && !e.deleting, e.pod
		p.mu.Unlock()
		if !current {
			return
		}
		if err := p.CreatePod(ctx, pod); err != nil {
			p.log.Warn("cannot create the pod", "pod", k, "err", err)
			p.retry(ctx, k, e)
		}
	})
}

// start starts unitrun pod name, of Pod k, and returns at once, as the
// kubelet does: the start lasts until each sidecar has passed its startup
// probe, which may be never, and the pod controller's few workers must not
// wait for it. The Pod's status says how the start goes.
func (p *Provider) start(ctx context.Context, k, name string) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		began := time.Now()
		if err := p.eng.start(ctx, name); err != nil {
			p.log.Error("cannot start the pod", "pod", k, "unitrun_pod", name, "err", err)
			return
		}
		p.log.Info("started", "pod", k, "unitrun_pod", name, "took", time.Since(began))
	}()
}

func (p *Provider) put(k string, e *entry) { p.putAgain(k, nil, e) }

// putAgain is put of e, the entry of a Pod's creation made again (a pull
// retried), in place of prev, the entry it was made again from; but if
// prev was deleted, or is being deleted, while the creation ran (a pull
// takes time), it puts nothing and returns false: an entry put then would
// outlive its Pod, retrying its pull for ever. For a first creation (prev
// nil) it is put.
func (p *Provider) putAgain(k string, prev, e *entry) bool {
	p.mu.Lock()
	if prev != nil && prev.pod.UID == e.pod.UID && (prev.deleting || p.pods[k] != prev) {
		p.mu.Unlock()
		return false
	}
	p.pods[k] = e
	p.watchPod(e)
	p.mu.Unlock()
	p.sendStatus(context.Background(), e)
	return true
}

// UpdatePod keeps pod's new labels, annotations and activeDeadlineSeconds,
// which applies from then on. The other fields that a Pod may change once
// created (images, tolerations) do not change what the node runs.
func (p *Provider) UpdatePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.pods[k]
	if e == nil || e.pod.UID != pod.UID {
		return errdefs.NotFoundf("pod %s is not on this node", k)
	}
	if e.refused == nil {
		data, err := json.Marshal(pod)
		if err != nil {
			return err
		}
		if err := writeFile(p.record(e.name), data); err != nil {
			return err
		}
	}
	e.pod = pod.DeepCopy()
	return nil
}

// DeletePod starts the deletion of the Pod ([Provider.delete]) and
// returns: virtual-kubelet waits for no deletion, and one Pod's grace
// period holds up no other Pod's deletion. A deletion under way is not
// started again; one that fails removes the Pod from the API.
func (p *Provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	k := key(pod.Namespace, pod.Name)
	p.mu.Lock()
	e := p.pods[k]
	if e == nil {
		p.mu.Unlock()
		return errdefs.NotFoundf("pod %s is not on this node", k)
	}
	if e.deleting {
		p.mu.Unlock()
		return nil
	}
	e.deleting = true
	p.mu.Unlock()
	go func() {
		if err := p.delete(context.WithoutCancel(ctx), pod, e, true); err != nil {
			p.log.Error("cannot delete the pod", "pod", k, "unitrun_pod", e.name, "err", err)
			p.mu.Lock()
			e.deleting = false
			p.mu.Unlock()
			// The Pod leaves the API all the same, as virtual-kubelet
			// would have removed it at the grace period's end
			// ([Provider.PodClient]).
			p.removeObject(context.WithoutCancel(ctx), e.pod)
		}
	}()
	return nil
}

// grace is how long a deletion of pod, of entry e, lets its containers
// end: the deletion's grace period, else the Pod's termination grace
// period, each at least the kubelet's minimum (kube.GracePeriod); 0 for
// none, which leaves the apps' stop timeout, the Pod's grace period as
// kube maps it.
func grace(pod *corev1.Pod, e *entry) time.Duration {
	g := pod.DeletionGracePeriodSeconds
	if g == nil {
		g = e.pod.Spec.TerminationGracePeriodSeconds
	}
	if g == nil {
		return 0
	}
	return kube.GracePeriod(*g)
}

// delete stops the Pod's unitrun pod gracefully, as the kubelet stops a
// Pod's containers: each app's main process gets SIGTERM, and whatever is
// left of an app when its main process has exited, or at the end of the
// grace period ([grace]), SIGKILL. It then reports the status the pod
// ended with, removes the Pod from the API if inAPI (and the provider has
// a Client) and removes the unitrun pod.
func (p *Provider) delete(ctx context.Context, pod *corev1.Pod, e *entry, inAPI bool) error {
	k := key(pod.Namespace, pod.Name)
	began := time.Now()
	if e.refused == nil {
		if s, err := p.eng.status(e.name); err == nil {
			p.stoppingEvents(pod, s)
		}
		last, ok, err := p.eng.stop(ctx, e.name, grace(pod, e))
		if err != nil {
			return fmt.Errorf("stop unitrun pod %s: %w", e.name, err)
		}
		if ok {
			p.mu.Lock()
			e.final = &last
			p.mu.Unlock()
			p.sendStatus(ctx, e)
		}
	}
	stopped := time.Since(began)
	if inAPI {
		p.removeObject(ctx, e.pod)
	}
	removed := time.Since(began)
	if e.refused == nil {
		if err := p.eng.remove(ctx, e.name); err != nil {
			return fmt.Errorf("remove unitrun pod %s: %w", e.name, err)
		}
		if err := os.Remove(p.record(e.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	p.mu.Lock()
	if p.pods[k] == e {
		delete(p.pods, k)
	}
	p.mu.Unlock()
	attrs := []any{"pod", k, "unitrun_pod", e.name, "stopped_after", stopped, "removed_after", removed, "took", time.Since(began)}
	if asked, ok := deletionAsked(pod); ok {
		attrs = append(attrs, "began_after_asked", began.Sub(asked).Round(time.Millisecond))
	}
	p.log.Info("deleted", attrs...)
	return nil
}

// deletionAsked returns when pod's deletion was asked of the API server,
// by the API server's clock and to the second: its deletion timestamp is
// that time plus the grace period.
func deletionAsked(pod *corev1.Pod) (time.Time, bool) {
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return pod.DeletionTimestamp.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second), true
}

// removeObject deletes pod from the API at once, as the kubelet does once
// its containers have ended; it is gone already if it was deleted without
// a grace period, or replaced by a Pod of its name (another UID).
func (p *Provider) removeObject(ctx context.Context, pod *corev1.Pod) {
	if p.cfg.Client == nil {
		return
	}
	opts := *metav1.NewDeleteOptions(0)
	opts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))
	err := p.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.log.Warn("cannot remove the deleted pod from the API", "pod", key(pod.Namespace, pod.Name), "err", err)
	}
}

// GetPod returns the Pod as the provider took it on.
func (p *Provider) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.pods[key(namespace, name)]
	if e == nil {
		return nil, errdefs.NotFoundf("pod %s is not on this node", key(namespace, name))
	}
	return e.pod.DeepCopy(), nil
}

// GetPodStatus returns the Pod's status, from its unitrun pod's status files.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	e := p.lookup(key(namespace, name))
	if e == nil {
		return nil, errdefs.NotFoundf("pod %s is not on this node", key(namespace, name))
	}
	return p.status(e)
}

// lookup returns the entry of the Pod namespace/name k, or nil.
func (p *Provider) lookup(k string) *entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[k]
}

// status is e's status. A Pod active for longer than its
// activeDeadlineSeconds is stopped, and has then failed
// (DeadlineExceeded), as the kubelet fails it: virtual-kubelet reports no
// status after the first that has ended, so it is not Failed before its
// containers have ended.
func (p *Provider) status(e *entry) (*corev1.PodStatus, error) {
	p.mu.Lock()
	pod, final, sent := e.pod, e.final, e.sent
	var pull *pullFailure
	if e.pull != nil {
		f := *e.pull
		pull = &f
	}
	p.mu.Unlock()
	var st *corev1.PodStatus
	switch {
	case e.refused != nil:
		st = refusedStatus(pod, e.refused, e.at)
	case e.waiting != nil:
		st = waitingStatus(pod, e.waiting, e.at)
	case pull != nil:
		st = pullStatus(pod, pull, e.at)
	case final != nil:
		st = p.podStatus(e, pod, *final)
	default:
		s, err := p.eng.status(e.name)
		if err != nil {
			return nil, err
		}
		p.containerEvents(e, pod, s)
		st = p.podStatus(e, pod, s)
	}
	if e.refused == nil {
		p.readinessGates(pod, st)
	}
	keepTransitions(st, sent, time.Now())
	if p.cfg.Address != "" {
		ips := []corev1.HostIP{{IP: p.cfg.Address}}
		st.HostIP, st.HostIPs = p.cfg.Address, ips
		st.PodIP, st.PodIPs = p.cfg.Address, []corev1.PodIP{{IP: p.cfg.Address}}
	}
	return st, nil
}

// podStatus is the status of Pod pod, whose unitrun pod is e's and in
// state s, with the Pod's deadline and its emptyDirs' sizeLimits applied:
// past the deadline, or once an emptyDir on disk holds more than its
// sizeLimit ([Provider.evicted]), the unitrun pod is stopped once, and
// has failed once it has ended, as the kubelet fails it
// (DeadlineExceeded, Evicted).
func (p *Provider) podStatus(e *entry, pod *corev1.Pod, s podState) *corev1.PodStatus {
	st := podStatus(pod, e.name, s)
	var reason, message string
	if pastDeadline(pod, s, time.Now()) {
		reason, message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
	} else if message = p.evicted(e, s, time.Now()); message != "" {
		reason = "Evicted"
	}
	if reason == "" {
		return st
	}
	if s.ended() {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, message
		return st
	}
	p.mu.Lock()
	stopping := e.stopping
	e.stopping = true
	p.mu.Unlock()
	if !stopping {
		p.log.Info("stopping the pod", "pod", key(pod.Namespace, pod.Name), "unitrun_pod", e.name, "reason", reason, "message", message)
		go func() {
			if _, _, err := p.eng.stop(context.Background(), e.name, grace(pod, e)); err != nil {
				p.log.Warn("cannot stop the pod", "pod", key(pod.Namespace, pod.Name), "unitrun_pod", e.name, "reason", reason, "err", err)
			}
		}()
	}
	return st
}

// GetPods returns every Pod the provider runs.
func (p *Provider) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pods []*corev1.Pod
	for _, e := range p.pods {
		pods = append(pods, e.pod.DeepCopy())
	}
	return pods, nil
}

// NotifyPods registers f, which the provider calls with each Pod whose
// status changed, and until ctx ends reads a Pod's status as soon as its
// unitrun pod's records change ([Provider.watchRecords]) and every Pod's
// every Poll (which also finds what no record says, such as a deadline
// passed); until then it also keeps its Pods' volumes of API data up to
// date (refreshVolumes).
func (p *Provider) NotifyPods(ctx context.Context, f func(*corev1.Pod)) {
	p.watchRecords(ctx)
	p.mu.Lock()
	p.notify = f
	entries := make([]*entry, 0, len(p.pods))
	for _, e := range p.pods {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	go p.refreshVolumes(ctx)
	go func() {
		t := time.NewTicker(p.poll)
		defer t.Stop()
		for {
			for _, e := range entries {
				p.sendStatus(ctx, e)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.mu.Lock()
			entries = entries[:0]
			for _, e := range p.pods {
				entries = append(entries, e)
			}
			p.mu.Unlock()
		}
	}()
}

// sendStatus notifies e's status if it changed since it was last sent.
func (p *Provider) sendStatus(ctx context.Context, e *entry) {
	p.sending.Lock()
	defer p.sending.Unlock()
	st, err := p.status(e)
	if err != nil {
		p.log.Warn("cannot read the pod's status", "pod", key(e.pod.Namespace, e.pod.Name), "unitrun_pod", e.name, "err", err)
		return
	}
	if endedWhileRunning(st) {
		return // a record of the ending is still to come, and sends it
	}
	p.mu.Lock()
	f := p.notify
	changed := e.sent == nil || !equality.Semantic.DeepEqual(e.sent, st)
	if f != nil && changed {
		e.sent = st
	}
	pod := e.pod.DeepCopy()
	p.mu.Unlock()
	if f == nil || !changed {
		return
	}
	pod.Status = *st
	f(pod)
}

// endedWhileRunning reports whether st has ended while a container still
// runs: read between the records of the pod's end (the app's exit, then
// its sidecars'). It is not sent: virtual-kubelet sends no status after
// the first that has ended, so the sidecars would show running for ever.
func endedWhileRunning(st *corev1.PodStatus) bool {
	if st.Phase != corev1.PodSucceeded && st.Phase != corev1.PodFailed {
		return false
	}
	for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
		if cs.State.Running != nil {
			return true
		}
	}
	return false
}

// containerPaths rewrites the app paths of a unitrun manifest error as
// the Pod's container paths (kube.ContainerPaths), on one line.
func containerPaths(pod *corev1.Pod, err error) error {
	msg := kube.ContainerPaths(err.Error(), len(pod.Spec.InitContainers))
	return errors.New(strings.ReplaceAll(msg, "\n", "; "))
}
