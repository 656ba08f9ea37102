package image

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The rules of image references, as docker reads them.
const (
	// defaultRegistry is the registry of a name without one (Docker Hub),
	// dockerHub its other name.
	defaultRegistry = "index.docker.io"
	dockerHub       = "docker.io"
	// defaultTag is the tag of a name without a tag or digest.
	defaultTag = "latest"
	// library is the namespace of Docker Hub's one-part names.
	library = "library/"

	tagChars        = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	repositoryChars = "abcdefghijklmnopqrstuvwxyz0123456789_-./"
)

// digestSizes are the hex digits of each digest algorithm a reference may
// name.
var digestSizes = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// A RefError is a reference that is not an image name.
type RefError struct {
	Ref string
	Err error
}

func (e *RefError) Error() string {
	return fmt.Sprintf("%q is not an image reference (REGISTRY/REPOSITORY[:TAG] or REPOSITORY@sha256:DIGEST, in lower case): %v", e.Ref, e.Err)
}

func (e *RefError) Unwrap() error { return e.Err }

// Normalize returns the normalized name of image reference ref:
// "REGISTRY/REPOSITORY:TAG" or "REGISTRY/REPOSITORY@ALGORITHM:HEX", the
// registry index.docker.io unless ref names one (its first part, when it
// has a "." or a ":" or is localhost), Docker Hub's one-part names under
// "library/", the tag latest unless ref has a tag or a digest (a digest
// wins over a tag). It reads references as go-containerregistry's name
// package does, without its regexps, whose compiling would cost every run
// of unitrun. An error is a *RefError.
func Normalize(ref string) (string, error) {
	n, err := parseRef(ref)
	if err != nil {
		return "", &RefError{Ref: ref, Err: err}
	}
	return n, nil
}

func parseRef(s string) (string, error) {
	if strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") {
		return "", errors.New("a reference has no URL scheme (http:// or https://)")
	}
	n, tagErr := tagged(s)
	if tagErr == nil {
		return n, nil
	}
	base, digest, ok := strings.Cut(s, "@")
	if !ok {
		return "", tagErr
	}
	if strings.Contains(digest, "@") {
		return "", errors.New("a reference has at most one @")
	}
	if err := checkDigest(digest); err != nil {
		return "", err
	}
	if n, err := tagged(base); err == nil {
		base = n[:strings.LastIndex(n, ":")] // a digest wins over a tag
	}
	repo, err := repository(base)
	if err != nil {
		return "", err
	}
	return repo + "@" + digest, nil
}

// tagged returns the name of s read as REPOSITORY[:TAG].
func tagged(s string) (string, error) {
	base, tag := s, ""
	if i := strings.LastIndex(s, ":"); i >= 0 && !strings.Contains(s[i+1:], "/") {
		base, tag = s[:i], s[i+1:]
		if tag == "" {
			return "", errors.New("a tag follows the colon")
		}
		if err := check("a tag", tag, tagChars, 128); err != nil {
			return "", err
		}
	}
	if tag == "" {
		tag = defaultTag
	}
	repo, err := repository(base)
	if err != nil {
		return "", err
	}
	return repo + ":" + tag, nil
}

// repository returns the name of s read as [REGISTRY/]REPOSITORY.
func repository(s string) (string, error) {
	if s == "" {
		return "", errors.New("a repository is named")
	}
	registry, repo := "", s
	if first, rest, ok := strings.Cut(s, "/"); ok && (first == "localhost" || strings.ContainsAny(first, ".:")) {
		registry, repo = first, rest
	}
	if err := check("a repository", repo, repositoryChars, 255); err != nil {
		return "", err
	}
	if u, err := url.Parse("//" + registry); err != nil || u.Host != registry {
		return "", fmt.Errorf("registry %q is not a HOST[:PORT]", registry)
	}
	switch registry {
	case "", dockerHub:
		registry = defaultRegistry
	}
	if registry == defaultRegistry && !strings.Contains(repo, "/") {
		repo = library + repo
	}
	return registry + "/" + repo, nil
}

// check says what is wrong with element s of a reference, which has 1 to
// most of chars.
func check(what, s, chars string, most int) error {
	if len(s) == 0 || len(s) > most {
		return fmt.Errorf("%s has 1 to %d characters: %q", what, most, s)
	}
	if i := strings.IndexFunc(s, func(c rune) bool { return !strings.ContainsRune(chars, c) }); i >= 0 {
		return fmt.Errorf("%s has only the characters %s, not %q", what, chars, string([]rune(s[i:])[0]))
	}
	return nil
}

// checkDigest says what is wrong with digest d, "ALGORITHM:HEX".
func checkDigest(d string) error {
	alg, h, _ := strings.Cut(d, ":")
	if n, ok := digestSizes[alg]; !ok || len(h) != n || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("digest %q is not sha256: and 64 lower-case hex digits", d)
	}
	return nil
}
