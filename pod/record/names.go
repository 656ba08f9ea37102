package record

import "fmt"

// Patterns of pod and app names. A pod name of at most 29 characters keeps
// the pod's own unit names (unitrun-pod-P-shutdown.service, with every '-'
// of P escaped as \x2d) within systemd's 255; an app name may have the 63
// characters of a Kubernetes container name, and the longest unit name it
// forms with its pod's name (unitrun-pod-P-A-reaper.service) is checked
// against the 255 by package pod's CheckNames.
const (
	PodNamePattern = `^[a-z0-9][a-z0-9-]{0,28}$`
	AppNamePattern = `^[a-z0-9][a-z0-9-]{0,62}$`
	maxPodName     = 29
	maxAppName     = 63
)

// PodNameRule and AppNameRule say PodNamePattern and AppNamePattern in
// words, as an error about a name says them.
const (
	PodNameRule = "must be 1 to 29 characters of a-z, 0-9 and -, starting with a letter or digit"
	AppNameRule = "must be 1 to 63 characters of a-z, 0-9 and -, starting with a letter or digit"
)

// IsPodName reports whether name matches PodNamePattern.
func IsPodName(name string) bool { return isName(name, maxPodName) }

// IsAppName reports whether name matches AppNamePattern.
func IsAppName(name string) bool { return isName(name, maxAppName) }

// isName reports whether name matches PodNamePattern (max maxPodName) or
// AppNamePattern (max maxAppName): max characters at most of a-z, 0-9 and
// '-', the first not '-'. A loop, not the patterns' regexps: every hook
// checks names, and compiling a regexp is a good part of the exit hook's
// work (TestIsNameMatchesPatterns keeps the two alike).
func isName(name string, max int) bool {
	if name == "" || len(name) > max || name[0] == '-' {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// CheckNames reports whether pod matches PodNamePattern and each of apps
// AppNamePattern: names that are safe in a path of the pod's state. (A
// manifest's names must also keep the pod's unit names within systemd's
// limit, which package pod checks.)
func CheckNames(pod string, apps ...string) error {
	if !IsPodName(pod) {
		return fmt.Errorf("name %q: %s", pod, PodNameRule)
	}
	for _, a := range apps {
		if !IsAppName(a) {
			return fmt.Errorf("app name %q: %s", a, AppNameRule)
		}
	}
	return nil
}
