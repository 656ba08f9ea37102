package registry

import (
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/unitrun/unitrun/image"
)

// A keychain gives a registry the credentials of PullOptions.Auth, else
// of a docker-style credentials file's "auths", else none.
type keychain struct {
	auth map[string]image.Credentials
	file *image.AuthFile
}

// newKeychain reads the credentials file that o names or the first of
// the usual ones that exists (image.ReadAuthFile).
func newKeychain(o image.PullOptions) (*keychain, error) {
	f, err := image.ReadAuthFile(o.AuthFile)
	if err != nil {
		return nil, err
	}
	return &keychain{auth: o.Auth, file: f}, nil
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
	for key, c := range k.file.Auths {
		h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
		h, _, _ = strings.Cut(h, "/")
		for _, want := range hosts {
			if h == want {
				return authn.AuthConfig{Username: c.Username, Password: c.Password, Auth: c.Auth,
					IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}, true
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
		return "to the credentials for " + host + " in " + k.file.Path
	}
	if k.file.Path != "" {
		return "without credentials: " + k.file.Path + " has none for " + host
	}
	if len(k.file.Looked) == 0 {
		return "without credentials: there is no credentials file ($REGISTRY_AUTH_FILE, $DOCKER_CONFIG and $HOME are unset)"
	}
	return "without credentials: there is no credentials file at " + strings.Join(k.file.Looked, ", ")
}
