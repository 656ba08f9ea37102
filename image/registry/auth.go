package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/unitrun/unitrun/image"
)

// A keychain gives a registry the credentials of PullOptions.Auth, else
// of a docker-style config file's "auths", else none.
type keychain struct {
	auth map[string]image.Credentials
	// file is the credentials file read, "" when there is none;
	// looked is where one was looked for, for errors.
	file   string
	looked []string
	auths  map[string]authn.AuthConfig
}

// authFiles returns where credentials are looked for when PullOptions do
// not name a file, in order: the first that exists is read.
func authFiles() []string {
	var files []string
	if f := os.Getenv("REGISTRY_AUTH_FILE"); f != "" {
		files = append(files, f)
	}
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		files = append(files, filepath.Join(d, "config.json"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(h, ".docker", "config.json"))
	}
	return files
}

// newKeychain reads the credentials file that o names or the first of
// authFiles that exists.
func newKeychain(o image.PullOptions) (*keychain, error) {
	k := &keychain{auth: o.Auth}
	files := authFiles()
	if o.AuthFile != "" {
		files = []string{o.AuthFile}
	}
	for _, f := range files {
		k.looked = append(k.looked, f)
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) && o.AuthFile == "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("registry credentials: %w", err)
		}
		var cf struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(b, &cf); err != nil {
			return nil, fmt.Errorf("registry credentials file %s: %v", f, err)
		}
		k.file, k.auths = f, cf.Auths
		break
	}
	return k, nil
}

// Resolve returns the credentials for r's registry.
func (k *keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := r.RegistryStr()
	if c, ok := k.auth[host]; ok {
		return authn.FromConfig(authn.AuthConfig{Username: c.Username, Password: c.Password}), nil
	}
	if c, ok := k.lookup(host); ok {
		return authn.FromConfig(c), nil
	}
	return authn.Anonymous, nil
}

// lookup finds host's entry in the file's auths, whose keys may be a bare
// host or a URL ("https://index.docker.io/v1/").
func (k *keychain) lookup(host string) (authn.AuthConfig, bool) {
	hosts := []string{host}
	if host == name.DefaultRegistry {
		hosts = append(hosts, "docker.io", "registry-1.docker.io")
	}
	for key, c := range k.auths {
		h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
		h, _, _ = strings.Cut(h, "/")
		for _, want := range hosts {
			if h == want {
				return c, true
			}
		}
	}
	return authn.AuthConfig{}, false
}

// source says with which credentials host was asked, in a user's words.
func (k *keychain) source(host string) string {
	if _, ok := k.auth[host]; ok {
		return "to the credentials given for " + host
	}
	if _, ok := k.lookup(host); ok {
		return "to the credentials for " + host + " in " + k.file
	}
	if k.file != "" {
		return "without credentials: " + k.file + " has none for " + host
	}
	if len(k.looked) == 0 {
		return "without credentials: there is no credentials file ($REGISTRY_AUTH_FILE, $DOCKER_CONFIG and $HOME are unset)"
	}
	return "without credentials: there is no credentials file at " + strings.Join(k.looked, ", ")
}
