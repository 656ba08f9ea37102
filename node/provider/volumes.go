package provider

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unitrun/unitrun/pod/kube"
)

// inputs are what a Pod's containers take from the API besides the Pod:
// the service variables, the ConfigMaps and Secrets the Pod names (an
// object not found is absent) and the tokens of its projected
// serviceAccountToken sources. translate notes in it what the Pod waits
// for and the volumes it maps.
type inputs struct {
	svcEnv     map[string]string
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	tokens     map[string]token // by tokenKey
	// hostHosts and hostResolv are the host's /etc/hosts and
	// /etc/resolv.conf, which the Pod's own are made from (etcFiles).
	hostHosts, hostResolv []byte

	waits   []string           // objects or keys not there yet, that the Pod needs
	volumes map[string]*volume // by name
}

// A token is a service account token of a projected volume, and when the
// node requests another: at 80% of its life, as the kubelet does.
type token struct {
	value     string
	refreshAt time.Time
}

// tokenKey names the token of source s of the Pod's volume v.
func tokenKey(v, s int) string { return strconv.Itoa(v) + "/" + strconv.Itoa(s) }

// wait notes that the Pod needs what, which is not there yet.
func (in *inputs) wait(format string, args ...any) {
	in.waits = append(in.waits, fmt.Sprintf(format, args...))
}

// fetch reads the host's hosts and resolver files, and from the API what
// the Pod's volumes and environment name: its
// ConfigMaps and Secrets (one not found is left out, for translate to wait
// for unless it is optional), and a token of its service account for each
// projected serviceAccountToken source, bound to the Pod as the kubelet
// requests it; a token of tokens that is not due for refresh is kept.
func (p *Provider) fetch(ctx context.Context, pod *corev1.Pod, tokens map[string]token) (*inputs, error) {
	svcEnv, err := p.svcs.env(ctx, pod)
	if err != nil {
		return nil, err
	}
	in := &inputs{svcEnv: svcEnv, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, tokens: map[string]token{}}
	if err := in.readHostFiles(); err != nil {
		return nil, err
	}
	client := p.cfg.Client
	if client == nil {
		return in, nil
	}
	cms, secrets := references(pod)
	if err := getAll(ctx, cms, client.CoreV1().ConfigMaps(pod.Namespace).Get, in.configMaps); err != nil {
		return nil, fmt.Errorf("get the configmaps of pod %s: %w", key(pod.Namespace, pod.Name), err)
	}
	if err := getAll(ctx, secrets, client.CoreV1().Secrets(pod.Namespace).Get, in.secrets); err != nil {
		return nil, fmt.Errorf("get the secrets of pod %s: %w", key(pod.Namespace, pod.Name), err)
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	for i, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for j, src := range v.Projected.Sources {
			t := src.ServiceAccountToken
			if t == nil {
				continue
			}
			now := time.Now()
			if old, ok := tokens[tokenKey(i, j)]; ok && now.Before(old.refreshAt) {
				in.tokens[tokenKey(i, j)] = old
				continue
			}
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: t.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			}}
			if t.Audience != "" {
				req.Spec.Audiences = []string{t.Audience}
			}
			tr, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("request a token of service account %s: %w", key(pod.Namespace, sa), err)
			}
			life := tr.Status.ExpirationTimestamp.Sub(now)
			in.tokens[tokenKey(i, j)] = token{value: tr.Status.Token, refreshAt: now.Add(life * 8 / 10)}
		}
	}
	return in, nil
}

// getAll gets each object of names into objs, leaving out those not found.
func getAll[T any](ctx context.Context, names []string, get func(context.Context, string, metav1.GetOptions) (T, error), objs map[string]T) error {
	for _, name := range names {
		obj, err := get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		default:
			objs[name] = obj
		}
	}
	return nil
}

// references lists the ConfigMaps and Secrets the Pod's volumes and
// containers name.
func references(pod *corev1.Pod) (configMaps, secrets []string) {
	add := func(list *[]string, name string) {
		if !slices.Contains(*list, name) {
			*list = append(*list, name)
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add(&configMaps, v.ConfigMap.Name)
		case v.Secret != nil:
			add(&secrets, v.Secret.SecretName)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					add(&configMaps, src.ConfigMap.Name)
				}
				if src.Secret != nil {
					add(&secrets, src.Secret.Name)
				}
			}
		}
	}
	for _, ctr := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for _, e := range ctr.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add(&configMaps, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(&secrets, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range ctr.EnvFrom {
			if e.ConfigMapRef != nil {
				add(&configMaps, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(&secrets, e.SecretRef.Name)
			}
		}
	}
	return configMaps, secrets
}

// A volume is one of the Pod's volumes as the node provides it: a host
// directory that mounts bind into containers.
type volume struct {
	// dir is the host directory: a hostPath's path, else one of the
	// unitrun pod's state that the node fills before the pod starts.
	dir string
	// emptyDir says the node makes dir, empty and writable by every
	// user, and in it the subPaths that containers mount.
	emptyDir bool
	// tmpfsSize, if not 0, makes dir a tmpfs of that many bytes of its
	// own: a memory-backed emptyDir's sizeLimit, as the kubelet mounts it.
	tmpfsSize int64
	// sizeLimit, if not nil, is an emptyDir on disk's: a Pod whose
	// emptyDir holds more is evicted ([Provider.evicted]).
	sizeLimit *resource.Quantity
	subPaths  []string
	// files are the contents of a ConfigMap, Secret, downward API or
	// projected volume, which are always mounted read-only; by path in
	// the volume.
	files map[string]volumeFile
}

// A volumeFile is one file of a volume.
type volumeFile struct {
	data []byte
	mode os.FileMode
}

// defaultVolumeMode is the mode of a volume's files when the Pod sets
// none, as the API server defaults defaultMode.
const defaultVolumeMode = 0o644

// podVolumes makes the Pod's volumes (kp, as kube reads it, refuses what
// it cannot mount): the directories of its hostPaths, emptyDirs and API
// objects, and the files of those.
func (c *Config) podVolumes(p *corev1.Pod, kp *kube.Pod, in *inputs, rs *refusals) map[string]*volume {
	vols := map[string]*volume{}
	name := podName(p.Namespace, p.Name, string(p.UID))
	for i, v := range p.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d]", i)
		vol := volume{dir: volumeDir(c.StateDir, name, v.Name)}
		switch {
		case v.HostPath != nil:
			vol.dir = v.HostPath.Path
		case v.EmptyDir != nil:
			vol.emptyDir = true
			if v.EmptyDir.Medium == corev1.StorageMediumMemory {
				vol.dir = filepath.Join(memoryDir(name), v.Name)
				if l := v.EmptyDir.SizeLimit; l != nil && l.Value() > 0 {
					vol.tmpfsSize = l.Value()
				}
			}
			if l := v.EmptyDir.SizeLimit; l != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
				vol.sizeLimit = l
			}
		case v.ConfigMap != nil:
			vol.files = map[string]volumeFile{}
			s := v.ConfigMap
			keyFiles(in, "configmap", s.Name, in.configMapData(s.Name, true), s.Items, mode(s.DefaultMode, defaultVolumeMode), s.Optional, field+".configMap", vol.files, rs)
		case v.Secret != nil:
			vol.files = map[string]volumeFile{}
			s := v.Secret
			keyFiles(in, "secret", s.SecretName, in.secretData(s.SecretName), s.Items, mode(s.DefaultMode, defaultVolumeMode), s.Optional, field+".secret", vol.files, rs)
		case v.DownwardAPI != nil:
			vol.files = map[string]volumeFile{}
			c.downwardFiles(kp, v.DownwardAPI.Items, mode(v.DownwardAPI.DefaultMode, defaultVolumeMode), field+".downwardAPI", vol.files, rs)
		case v.Projected != nil:
			vol.files = map[string]volumeFile{}
			def := mode(v.Projected.DefaultMode, defaultVolumeMode)
			for j, src := range v.Projected.Sources {
				sf := fmt.Sprintf("%s.projected.sources[%d]", field, j)
				switch {
				case src.ConfigMap != nil:
					keyFiles(in, "configmap", src.ConfigMap.Name, in.configMapData(src.ConfigMap.Name, true), src.ConfigMap.Items, def, src.ConfigMap.Optional, sf+".configMap", vol.files, rs)
				case src.Secret != nil:
					keyFiles(in, "secret", src.Secret.Name, in.secretData(src.Secret.Name), src.Secret.Items, def, src.Secret.Optional, sf+".secret", vol.files, rs)
				case src.DownwardAPI != nil:
					c.downwardFiles(kp, src.DownwardAPI.Items, def, sf+".downwardAPI", vol.files, rs)
				case src.ServiceAccountToken != nil:
					token, ok := in.tokens[tokenKey(i, j)]
					if !ok {
						in.wait("a token of the pod's service account")
					}
					addFile(vol.files, src.ServiceAccountToken.Path, []byte(token.value), def, sf+".serviceAccountToken.path", rs)
				default:
					rs.Add(sf, "only configMap, secret, downwardAPI and serviceAccountToken sources are supported")
				}
			}
		default:
			continue // kube refuses it
		}
		vols[v.Name] = &vol
	}
	return vols
}

// memoryDir holds the memory-backed emptyDirs of unitrun pod name: a
// directory of the host's /dev/shm (a tmpfs every manager's view shares)
// that only root reads, which removeMemoryDir removes with the pod. An
// emptyDir with a sizeLimit is a tmpfs of its own mounted there (in the
// host's mount namespace, which every manager's view sees).
func memoryDir(name string) string { return filepath.Join("/dev/shm", "unitrun-node-"+name) }

// mode is the file mode m says, else def.
func mode(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & os.ModePerm
}

// addFile adds the file path of a volume, refusing a path that would leave
// the volume or name the node's own ..data.
func addFile(files map[string]volumeFile, path string, data []byte, m os.FileMode, field string, rs *refusals) {
	if !filepath.IsLocal(path) || strings.HasPrefix(path, "..") {
		rs.Add(field, "%q must be a relative path inside the volume, not starting with ..", path)
		return
	}
	files[filepath.Clean(path)] = volumeFile{data: data, mode: m}
}

// configMapData is ConfigMap name's data, and its binaryData if binary
// (a volume's files: the environment takes data alone, as the kubelet's
// does); nil if it was not found.
func (in *inputs) configMapData(name string, binary bool) map[string][]byte {
	cm := in.configMaps[name]
	if cm == nil {
		return nil
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	if binary {
		maps.Copy(data, cm.BinaryData)
	}
	return data
}

// secretData is Secret name's data; nil if it was not found.
func (in *inputs) secretData(name string) map[string][]byte {
	s := in.secrets[name]
	if s == nil {
		return nil
	}
	return maps.Collect(maps.All(s.Data))
}

// keyFiles adds the keys of data, the data of the object kind name (nil:
// not found), as files: each key at its own name, or only the items'
// keys, each at its path. An object or a key an item names that is not
// there is waited for, unless optional.
func keyFiles(in *inputs, kind, name string, data map[string][]byte, items []corev1.KeyToPath, def os.FileMode, optional *bool, field string, files map[string]volumeFile, rs *refusals) {
	if data == nil {
		if !kube.IsTrue(optional) {
			in.wait("%s %q", kind, name)
		}
		return
	}
	if len(items) == 0 {
		for k, v := range data {
			addFile(files, k, v, def, field, rs)
		}
		return
	}
	for i, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if !kube.IsTrue(optional) {
				in.wait("key %q of %s %q", it.Key, kind, name)
			}
			continue
		}
		addFile(files, it.Path, v, mode(it.Mode, def), fmt.Sprintf("%s.items[%d].path", field, i), rs)
	}
}

// downwardFiles adds the downward API's items to files: the Pod's fields
// and its containers' resources, as kube reads them from kp.
func (c *Config) downwardFiles(kp *kube.Pod, items []corev1.DownwardAPIVolumeFile, def os.FileMode, field string, files map[string]volumeFile, rs *refusals) {
	for i, it := range items {
		f := fmt.Sprintf("%s.items[%d]", field, i)
		var value string
		switch {
		case it.FieldRef != nil:
			v, why := kube.FieldRef(kp, it.FieldRef.FieldPath, c.Address)
			if why != "" {
				rs.Add(f+".fieldRef.fieldPath", "%q %s", it.FieldRef.FieldPath, why)
			}
			value = v
		case it.ResourceFieldRef != nil:
			ref := it.ResourceFieldRef
			ctr := kp.Container(ref.ContainerName)
			if ctr == nil {
				rs.Add(f+".resourceFieldRef.containerName", "%q names no container of the pod", ref.ContainerName)
				continue
			}
			divisor, err := kube.ParseQuantity(ref.Divisor.String())
			if err == nil {
				value, err = kube.ResourceValue(ctr, &kube.ResourceFieldSelector{Resource: ref.Resource, Divisor: divisor}, allocatable)
			}
			if err != nil {
				rs.Add(f+".resourceFieldRef.resource", "%v", err)
			}
		default:
			rs.Add(f, "needs a fieldRef or a resourceFieldRef")
		}
		addFile(files, it.Path, []byte(value), mode(it.Mode, def), f+".path", rs)
	}
}

// writeVolumes makes the volumes' directories under the unitrun pod's
// state: an emptyDir's, empty, and each API data volume's with its files
// (writePayload).
func writeVolumes(vols map[string]*volume) error {
	for _, v := range vols {
		switch {
		case v.emptyDir:
			if err := (&kube.VolumeDir{Dir: v.dir, SubPaths: v.subPaths}).MakeEmptyDir(); err != nil {
				return err
			}
		case v.files != nil:
			if err := os.MkdirAll(v.dir, 0o755); err != nil {
				return err
			}
			if err := writePayload(v.dir, v.files); err != nil {
				return err
			}
		}
	}
	return nil
}

// dataLink is the symlink of a volume's directory to its current files.
const dataLink = "..data"

// writePayload replaces the files of the volume directory dir at once, as
// the kubelet's atomic writer does: they are written into a new directory
// ..N, the symlink ..data is swapped to it in one rename, and each name
// at the volume's top is a symlink into ..data. A reader sees the old
// files or the new ones, never a mix. dir must exist: a volume whose pod
// has been removed is not made again.
func writePayload(dir string, files map[string]volumeFile) error {
	ts, err := os.MkdirTemp(dir, "..")
	if err != nil {
		return err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	top := map[string]bool{}
	for path, f := range files {
		full := filepath.Join(ts, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.mode); err != nil {
			return err
		}
		first, _, _ := strings.Cut(path, string(filepath.Separator))
		top[first] = true
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	tmp := filepath.Join(dir, dataLink+"_tmp")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
			return err
		}
	}
	if old != "" && old != filepath.Base(ts) {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// volumeRefresh is how many status polls (Config.Poll) pass between two
// rewrites of the API data volumes of the running Pods whose ConfigMaps,
// Secrets, labels or annotations have changed, or whose tokens are due for
// refresh, as the kubelet's sync does: 20 s by default.
const volumeRefresh = 20

// refreshVolumes rewrites the API data volumes of the Pods that run whose
// files have changed (writePayload), every volumeRefresh polls until ctx
// ends.
// What cannot be read now (a ConfigMap gone that is not optional) keeps
// the files it had, as the kubelet keeps them.
func (p *Provider) refreshVolumes(ctx context.Context) {
	t := time.NewTicker(volumeRefresh * p.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		var running []*entry
		for _, e := range p.pods {
			if e.refused == nil && e.waiting == nil && e.final == nil && !e.deleting {
				running = append(running, e)
			}
		}
		p.mu.Unlock()
		for _, e := range running {
			if err := p.refreshEntry(ctx, e); err != nil {
				p.log.Warn("cannot refresh the pod's volumes", "pod", key(e.pod.Namespace, e.pod.Name), "unitrun_pod", e.name, "err", err)
			}
		}
	}
}

// refreshEntry rewrites the volumes of e's Pod whose files differ from
// those last written.
func (p *Provider) refreshEntry(ctx context.Context, e *entry) error {
	p.mu.Lock()
	pod, tokens, written := e.pod, e.tokens, e.volumes
	p.mu.Unlock()
	in, err := p.fetch(ctx, pod, tokens)
	if err != nil {
		return err
	}
	if _, err := p.cfg.translate(pod, in); err != nil {
		return nil
	}
	for name, v := range in.volumes {
		if v.files == nil || written != nil && reflect.DeepEqual(written[name].files, v.files) {
			continue
		}
		if err := writePayload(v.dir, v.files); err != nil {
			return err
		}
	}
	p.mu.Lock()
	e.tokens, e.volumes = in.tokens, in.volumes
	p.mu.Unlock()
	return nil
}
