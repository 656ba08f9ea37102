package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// An AuthFile is the docker-style credentials file (config.json,
// auth.json) that a pull reads.
type AuthFile struct {
	// Path is the file read, "" when there is none.
	Path string
	// Looked is where one was looked for, in order.
	Looked []string
	// Auths are its "auths": each registry's credentials, by the key the
	// file gives (a host, or a URL such as "https://index.docker.io/v1/").
	Auths map[string]AuthEntry
}

// An AuthEntry is one registry's credentials in an AuthFile.
type AuthEntry struct {
	Username      string `json:"username,omitzero"`
	Password      string `json:"password,omitzero"`
	Auth          string `json:"auth,omitzero"` // base64 of "username:password"
	IdentityToken string `json:"identitytoken,omitzero"`
	RegistryToken string `json:"registrytoken,omitzero"`
}

// An AuthFileError is a credentials file that cannot be used.
type AuthFileError struct {
	Path string
	// Var is the environment variable that named the file
	// ("REGISTRY_AUTH_FILE", "DOCKER_CONFIG" or "HOME"), "" when
	// PullOptions.AuthFile did.
	Var string
	// Problem is what is wrong with it, in a user's words.
	Problem string
}

func (e *AuthFileError) Error() string {
	if e.Var != "" {
		return fmt.Sprintf("$%s: the credentials file %s %s", e.Var, e.Path, e.Problem)
	}
	return fmt.Sprintf("the credentials file %s %s", e.Path, e.Problem)
}

// authShape is what a credentials file looks like, for its errors.
const authShape = `{"auths": {"REGISTRY": {"auth": "BASE64 OF USER:PASSWORD"}}}`

// ReadAuthFile reads the credentials file named file or, when file is "",
// the first that exists of $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json
// and ~/.docker/config.json. A file that file names must exist; any file
// read must be one; the error is an *AuthFileError.
func ReadAuthFile(file string) (*AuthFile, error) {
	type candidate struct{ path, env string }
	var cands []candidate
	if file != "" {
		cands = []candidate{{file, ""}}
	} else {
		if f := os.Getenv("REGISTRY_AUTH_FILE"); f != "" {
			cands = append(cands, candidate{f, "REGISTRY_AUTH_FILE"})
		}
		if d := os.Getenv("DOCKER_CONFIG"); d != "" {
			cands = append(cands, candidate{filepath.Join(d, "config.json"), "DOCKER_CONFIG"})
		}
		if h, err := os.UserHomeDir(); err == nil {
			cands = append(cands, candidate{filepath.Join(h, ".docker", "config.json"), "HOME"})
		}
	}
	a := &AuthFile{}
	for _, c := range cands {
		a.Looked = append(a.Looked, c.path)
		b, err := os.ReadFile(c.path)
		if errors.Is(err, fs.ErrNotExist) && file == "" {
			continue
		}
		if err != nil {
			return nil, &AuthFileError{Path: c.path, Var: c.env, Problem: readProblem(err)}
		}
		var cf struct {
			Auths map[string]AuthEntry `json:"auths"`
		}
		if err := json.Unmarshal(b, &cf); err != nil {
			problem := "is not a docker-style credentials file: want " + authShape
			var se *json.SyntaxError
			if errors.As(err, &se) {
				problem = fmt.Sprintf("is not JSON (at byte %d): want %s", se.Offset, authShape)
			}
			return nil, &AuthFileError{Path: c.path, Var: c.env, Problem: problem}
		}
		a.Path, a.Auths = c.path, cf.Auths
		break
	}
	return a, nil
}

// readProblem says why a file could not be read, in a user's words.
func readProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be read: permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is named already
	}
	return "cannot be read: " + err.Error()
}
