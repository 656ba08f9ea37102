package pod

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/internal/lazyregexp"
	"github.com/unitrun/unitrun/pod/appexec"
	"github.com/unitrun/unitrun/pod/logcopy"
	"github.com/unitrun/unitrun/pod/record"
	"github.com/unitrun/unitrun/unit"
)

// Patterns for names that systemd itself checks, and their rules in
// words, as an error says them.
const (
	envKeyPattern   = `^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	envKeyRule      = "must be one or more of a-z, A-Z, 0-9, _, - and ., not starting with a digit"
	userNamePattern = `^[A-Za-z_][A-Za-z0-9_-]{0,30}$`
	userNameRule    = "must be a name of 1 to 31 characters of a-z, A-Z, 0-9, _ and -, starting with a letter or _, or a numeric ID below 4294967295"
)

var (
	envKeyRE   = lazyregexp.New(envKeyPattern)
	userNameRE = lazyregexp.New(userNamePattern)
)

// problems collects the rules a manifest breaks.
type problems []error

func (p *problems) add(path, value, rule string) {
	*p = append(*p, &FieldError{Path: path, Value: value, Rule: rule})
}

func (m *Manifest) validate() error {
	var p problems
	if err := checkPodName(m.Name); err != nil {
		p.add("name", m.Name, err.Error())
	}
	oneOf(&p, "exitPolicy", m.ExitPolicy, record.FirstFailure, record.AnyExit, record.AllExit)
	oneOf(&p, "restartPolicy", m.RestartPolicy, record.Never, record.Always, record.OnFailure)
	oneOf(&p, "isolation", m.Isolation, NoIsolation, Namespaces)
	oneOf(&p, "network", m.Network, HostNetwork, NoNetwork)
	if m.Network == NoNetwork && m.Isolation != Namespaces {
		p.add("network", string(m.Network), "needs isolation: namespaces")
	}
	b := m.RestartBackoff
	if b.Initial < MinBackoff {
		p.add("restartBackoff.initial", b.Initial.String(), "must be at least "+MinBackoff.String()+", so that apps restarting in a loop leave the host responsive")
	}
	if b.Max < b.Initial {
		p.add("restartBackoff.max", b.Max.String(), "must not be shorter than restartBackoff.initial "+b.Initial.String())
	}
	if l := m.Logs.MaxSize; l != "" {
		if n, err := unit.ParseSize(l); err != nil || n < logcopy.MinMaxSize || n > math.MaxInt64 {
			p.add("logs.maxSize", l, fmt.Sprintf(`must be a size of %dK or more, like "10M"`, logcopy.MinMaxSize>>10))
		}
	}
	if n := m.Logs.MaxFiles; n != 0 && n < 2 {
		p.add("logs.maxFiles", fmt.Sprint(n), "must be 2 or more: the file being written and the one before it")
	}
	if !slices.ContainsFunc(m.Apps, func(a App) bool { return !a.Init && !a.Sidecar }) {
		rule := "must list at least one app that is not an init app"
		if slices.ContainsFunc(m.Apps, func(a App) bool { return a.Sidecar }) {
			rule += " or a sidecar"
		}
		p.add("apps", "", rule)
	}
	if len(m.Apps) > MaxApps {
		p.add("apps", "", fmt.Sprintf("lists %d apps, more than the %d a pod may have", len(m.Apps), MaxApps))
		return errors.Join(p...)
	}
	first := make(map[string]int)
	for i := range m.Apps {
		a := &m.Apps[i]
		path := fmt.Sprintf("apps[%d]", i)
		if j, dup := first[a.Name]; dup {
			p.add(path+".name", a.Name, fmt.Sprintf("duplicate of apps[%d].name", j))
		} else {
			first[a.Name] = i
		}
		p.app(path, a, m)
	}
	return errors.Join(p...)
}

// ValidEnvKey reports whether k may name a variable of an app's env:
// Kubernetes' rule for environment variable names.
func ValidEnvKey(k string) bool { return envKeyRE.MatchString(k) }

func (p *problems) app(path string, a *App, m *Manifest) {
	if err := CheckAppName(m.Name, a.Name); err != nil {
		p.add(path+".name", a.Name, err.Error())
	}
	if a.Image == "" || len(a.Exec) > 0 {
		p.argv(path+".exec", a.Exec)
	}
	p.image(path, a, m)
	for _, k := range slices.Sorted(maps.Keys(a.Env)) {
		kp := fmt.Sprintf("%s.env[%q]", path, k)
		if !ValidEnvKey(k) {
			p.add(kp, "", envKeyRule)
		} else if n := len(k) + 1 + len(a.Env[k]); n > maxArgLen {
			p.add(kp, "", fmt.Sprintf("is %d bytes as K=V, more than the %d the kernel passes to a command", n, maxArgLen))
		} else if err := unit.CheckEnvValue(k, a.Env[k]); err != nil {
			p.add(kp, "", err.Error())
		}
	}
	if a.TerminationMessagePath != "" {
		p.path(path+".terminationMessagePath", a.TerminationMessagePath)
	}
	p.capabilities(path+".capabilities", a.Capabilities)
	p.mounts(path+".mounts", a)
	if a.WorkingDir != "" {
		p.path(path+".workingDir", a.WorkingDir)
	}
	p.account(path+".user", a.User)
	p.account(path+".group", a.Group)
	if a.RestartPolicy != "" { // "": it would inherit the pod's, which is not valid
		oneOf(p, path+".restartPolicy", a.RestartPolicy, record.Never, record.Always, record.OnFailure)
	}
	switch {
	case a.Init && a.Sidecar:
		p.add(path+".sidecar", "true", "not allowed for an init app: an app is an init app, a sidecar or neither")
	case a.Init && a.RestartPolicy == record.Always:
		p.add(path+".restartPolicy", string(a.RestartPolicy), "not allowed for an init app, which runs to completion: only Never or OnFailure is")
	case a.Sidecar && a.RestartPolicy != record.Always && a.RestartPolicy != "":
		p.add(path+".restartPolicy", string(a.RestartPolicy), "not allowed for a sidecar, which runs again whenever it exits while the pod runs: only Always is")
	}
	for i, c := range a.SuccessExitCodes {
		if c < 0 || c > 255 {
			p.add(fmt.Sprintf("%s.successExitCodes[%d]", path, i), strconv.Itoa(c), "must be in 0..255")
		}
	}
	if a.Rootfs == "/" {
		p.add(path+".rootfs", a.Rootfs, "must be a directory other than /")
	} else if a.Rootfs != "" {
		p.path(path+".rootfs", a.Rootfs)
		if m.Isolation != Namespaces && a.ImageID == "" {
			p.add(path+".rootfs", a.Rootfs, "needs isolation: namespaces")
		}
	}
	p.resources(path+".resources", a.Resources)
	for _, h := range []struct {
		field string
		hook  *Hook
	}{{"postStart", a.PostStart}, {"preStop", a.PreStop}} {
		if h.hook == nil {
			continue
		}
		if a.Init {
			p.add(path+"."+h.field, "", "not allowed for an init app")
		}
		kinds := 0
		for _, set := range []bool{h.hook.Exec != nil, h.hook.HTTP != nil, h.hook.Sleep != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			p.add(path+"."+h.field, "", "must set exactly one of exec, http and sleep")
		}
		if h.hook.Exec != nil {
			p.argv(path+"."+h.field+".exec", h.hook.Exec)
		}
		if h.hook.HTTP != nil {
			p.httpGet(path+"."+h.field+".http", h.hook.HTTP)
		}
	}
	for _, pr := range []struct {
		field   string
		probe   *Probe
		actions []record.ProbeAction
		rule    string
	}{
		{"probe", a.Probe, []record.ProbeAction{record.RestartApp, record.FailPod}, ""},
		{"readinessProbe", a.ReadinessProbe, []record.ProbeAction{""}, "not allowed for a readiness probe, which never restarts the app nor ends the pod"},
		{"startupProbe", a.StartupProbe, []record.ProbeAction{record.RestartApp, record.FailPod}, ""},
	} {
		if pr.probe == nil {
			continue
		}
		if a.Init && !a.Sidecar {
			p.add(path+"."+pr.field, "", "not allowed for an init app")
		}
		if a.Sidecar && pr.probe.Action == record.FailPod {
			p.add(path+"."+pr.field+".action", string(pr.probe.Action), "must be restart for a sidecar, which never decides the pod's outcome")
		}
		p.probe(path+"."+pr.field, pr.probe)
		if pr.probe.StopTimeout > 0 && pr.field == "readinessProbe" {
			p.add(path+"."+pr.field+".stopTimeout", pr.probe.StopTimeout.String(), "not allowed for a readiness probe, which never ends a run")
		}
		if !slices.Contains(pr.actions, pr.probe.Action) {
			if pr.rule != "" {
				p.add(path+"."+pr.field+".action", string(pr.probe.Action), pr.rule)
			} else {
				oneOf(p, path+"."+pr.field+".action", pr.probe.Action, pr.actions...)
			}
		}
	}
}

// mounts checks a's mounts: clean absolute paths, each Path at most once
// and not the terminationMessagePath, which is bound already.
func (p *problems) mounts(path string, a *App) {
	seen := map[string]int{}
	for i, mt := range a.Mounts {
		mp := fmt.Sprintf("%s[%d]", path, i)
		p.path(mp+".source", mt.Source)
		p.path(mp+".path", mt.Path)
		if j, dup := seen[mt.Path]; dup {
			p.add(mp+".path", mt.Path, fmt.Sprintf("duplicate of %s[%d].path", path, j))
		} else {
			seen[mt.Path] = i
		}
		if a.TerminationMessagePath != "" && mt.Path == a.TerminationMessagePath {
			p.add(mp+".path", mt.Path, "is the app's terminationMessagePath, which is bound already")
		}
	}
}

func (p *problems) resources(path string, r Resources) {
	if r.Memory != "" {
		if n, err := unit.ParseSize(r.Memory); err != nil || n == 0 {
			p.add(path+".memory", r.Memory, `must be a size above 0, like "512M"`)
		}
	}
	if w := r.CPUWeight; w != nil && (*w < 1 || *w > 10000) {
		p.add(path+".cpuWeight", strconv.Itoa(*w), "must be in 1..10000")
	}
	if c := r.CPUMillis; c != nil && *c < 1 {
		p.add(path+".cpuMillis", strconv.Itoa(*c), "must be at least 1")
	}
	if t := r.Tasks; t != nil && *t < 1 {
		p.add(path+".tasks", strconv.Itoa(*t), "must be at least 1")
	}
}

func (p *problems) probe(path string, pr *Probe) {
	kinds := 0
	if pr.Exec != nil {
		kinds++
		p.argv(path+".exec", pr.Exec)
	}
	if h := pr.HTTP; h != nil {
		kinds++
		p.httpGet(path+".http", h)
	}
	if t := pr.TCP; t != nil {
		kinds++
		p.port(path+".tcp.port", t.Port)
	}
	if g := pr.GRPC; g != nil {
		kinds++
		p.port(path+".grpc.port", g.Port)
		if hasControl(g.Service) {
			p.add(path+".grpc.service", g.Service, "must hold no control characters")
		}
	}
	if kinds != 1 {
		p.add(path, "", "must set exactly one of exec, http, tcp and grpc")
	}
	if pr.InitialDelaySeconds < 0 {
		p.add(path+".initialDelaySeconds", strconv.Itoa(pr.InitialDelaySeconds), "must not be negative")
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"periodSeconds", pr.PeriodSeconds},
		{"timeoutSeconds", pr.TimeoutSeconds},
		{"failureThreshold", pr.FailureThreshold},
	} {
		if f.v < 1 {
			p.add(path+"."+f.name, strconv.Itoa(f.v), "must be at least 1")
		}
	}
}

// httpGet checks the port and path of an HTTP GET.
func (p *problems) httpGet(path string, h *HTTPProbe) {
	p.port(path+".port", h.Port)
	if !strings.HasPrefix(h.Path, "/") || strings.IndexFunc(h.Path, unicode.IsSpace) >= 0 || hasControl(h.Path) {
		p.add(path+".path", h.Path, "must start with / and hold no spaces or control characters")
	}
}

// argv checks a command line: not empty, argv[0] an absolute path fit for
// a unit file or a command name (no '/'), which the app's run looks up in
// its PATH, and every argument one the kernel passes.
func (p *problems) argv(path string, argv []string) {
	if len(argv) == 0 {
		p.add(path, "", "must not be empty")
		return
	}
	name := argv[0]
	switch {
	case name == "" || !filepath.IsAbs(name) && strings.Contains(name, "/"):
		p.add(path+"[0]", name, "must be an absolute path or a command name without '/', looked up in PATH")
		return
	case !filepath.IsAbs(name) && (len(name) > 255 || hasControl(name)):
		p.add(path+"[0]", name, "must be a command name of at most 255 bytes without control characters")
		return
	}
	for i, arg := range argv {
		if strings.IndexByte(arg, 0) >= 0 {
			p.add(fmt.Sprintf("%s[%d]", path, i), arg, "must not contain NUL")
			return
		}
		if len(arg) > maxArgLen {
			p.add(fmt.Sprintf("%s[%d]", path, i), "", fmt.Sprintf("is %d bytes, more than the %d the kernel passes to a command", len(arg), maxArgLen))
			return
		}
	}
	if !filepath.IsAbs(name) {
		return
	}
	if _, err := unit.ExecLine(argv); err != nil {
		p.add(path, "", err.Error())
	}
}

// path checks a directory setting. The unit file parser strips trailing
// white space, joins the next line to one ending in a backslash and knows
// no escapes here, so the path must be clean, absolute, printable and end
// in no white space and no backslash.
func (p *problems) path(path, dir string) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || hasControl(dir) ||
		strings.TrimRightFunc(dir, unicode.IsSpace) != dir || strings.HasSuffix(dir, `\`) {
		p.add(path, dir, "must be a clean absolute path without control characters, trailing space or trailing backslash")
	}
}

// account checks a user or group: a name systemd accepts, or a numeric ID.
// image checks a's image fields: an image excludes a rootfs (but for the
// root its creation gives it, [Manifest.ApplyImage]) and needs
// namespaces, as a rootfs does; args, imagePullPolicy and runAsNonRoot
// need an image.
func (p *problems) image(path string, a *App, m *Manifest) {
	if a.Image == "" {
		if len(a.Args) > 0 {
			p.add(path+".args", "", "needs image: without one, put the arguments in exec")
		}
		if a.ImagePullPolicy != "" {
			p.add(path+".imagePullPolicy", a.ImagePullPolicy, "needs image")
		}
		if a.RunAsNonRoot {
			p.add(path+".runAsNonRoot", "", "needs image: without one, set a user that is not root")
		}
		return
	}
	if strings.TrimFunc(a.Image, func(r rune) bool { return r > ' ' && r < 0x7f }) != "" {
		p.add(path+".image", a.Image, "must be an image reference (registry/name:tag or name@sha256:digest), without spaces or control characters")
	}
	if a.Rootfs != "" && a.ImageID == "" {
		p.add(path+".rootfs", a.Rootfs, "not allowed with image: an app's root is its image or its rootfs")
	}
	if a.ImagePullPolicy != "" {
		oneOf(p, path+".imagePullPolicy", image.PullPolicy(a.ImagePullPolicy), image.PullAlways, image.PullIfNotPresent, image.PullNever)
	}
	for i, arg := range a.Args {
		if strings.IndexByte(arg, 0) >= 0 {
			p.add(fmt.Sprintf("%s.args[%d]", path, i), arg, "must not contain NUL")
		}
	}
}

func (p *problems) account(path, name string) {
	if name == "" || userNameRE.MatchString(name) {
		return
	}
	if appexec.NumericID(name) {
		return
	}
	p.add(path, name, userNameRule)
}

func (p *problems) port(path string, port int) {
	if port < 1 || port > 65535 {
		p.add(path, strconv.Itoa(port), "must be in 1..65535")
	}
}

// oneOf checks that value is one of allowed.
func oneOf[T ~string](p *problems, path string, value T, allowed ...T) {
	if slices.Contains(allowed, value) {
		return
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	p.add(path, string(value), "must be one of "+strings.Join(names, ", "))
}

func hasControl(s string) bool {
	return !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0
}
