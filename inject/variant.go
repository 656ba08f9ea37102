package inject

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// A Variant is one build of a binary and the host OS releases it fits.
type Variant struct {
	// Path is the build's file.
	Path string
	// Match maps os-release(5) fields to patterns their values must match,
	// with the syntax of path.Match, such as {"ID": "rhel", "VERSION_ID":
	// "9*"}. A field the host lacks matches no pattern. An empty Match fits
	// every host.
	Match map[string]string
}

// Choose returns the first variant that fits the host whose os-release
// fields are osRelease. When none fits, the error names the host's ID,
// VERSION_ID and the other fields the variants ask about, and what each
// variant wants. A malformed pattern in any variant is an error.
func Choose(variants []Variant, osRelease map[string]string) (Variant, error) {
	if len(variants) == 0 {
		return Variant{}, errors.New("inject: no variants to choose from")
	}
	for i, v := range variants {
		for _, k := range sortedKeys(v.Match) {
			if _, err := path.Match(v.Match[k], ""); err != nil {
				return Variant{}, fmt.Errorf("inject: variant %d (%s): %s pattern %q: %w", i, v.Path, k, v.Match[k], err)
			}
		}
	}
	for _, v := range variants {
		if fits(v, osRelease) {
			return v, nil
		}
	}
	keys := []string{"ID", "VERSION_ID"}
	for _, v := range variants {
		for k := range v.Match {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys[2:])
	var host []string
	for _, k := range keys {
		if val, ok := osRelease[k]; ok {
			host = append(host, fmt.Sprintf("%s=%q", k, val))
		} else {
			host = append(host, k+" unset")
		}
	}
	var wants []string
	for _, v := range variants {
		var w []string
		for _, k := range sortedKeys(v.Match) {
			w = append(w, fmt.Sprintf("%s=%q", k, v.Match[k]))
		}
		wants = append(wants, v.Path+" wants "+strings.Join(w, " "))
	}
	return Variant{}, fmt.Errorf("inject: no variant fits this host (%s): %s", strings.Join(host, " "), strings.Join(wants, "; "))
}

// fits reports whether every pattern of v matches the host's field.
func fits(v Variant, osRelease map[string]string) bool {
	for k, pattern := range v.Match {
		val, ok := osRelease[k]
		if !ok {
			return false
		}
		if m, _ := path.Match(pattern, val); !m {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ParseVariant parses a variant written as PATH[:FIELD=PATTERN,...], such
// as "/bin/agent.rhel9:ID=rhel,VERSION_ID=9*" (the form of unitrun
// inject's --variant): the path before the first ':', then the fields of
// Match separated by commas.
func ParseVariant(s string) (Variant, error) {
	p, spec, _ := strings.Cut(s, ":")
	if p == "" {
		return Variant{}, fmt.Errorf("%q: the PATH before the first ':' is empty", s)
	}
	v := Variant{Path: p, Match: map[string]string{}}
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		k, pat, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Variant{}, fmt.Errorf("%q: %q must be FIELD=PATTERN", s, kv)
		}
		v.Match[k] = pat
	}
	return v, nil
}
