package boot

import (
	"os"
	"path/filepath"

	"github.com/unitrun/unitrun/internal/atomicfile"
)

// writeUnits makes dir and writes each of units (file name → text) there.
func writeUnits(dir string, units map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range units {
		if err := atomicfile.Write(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// managerEnv makes the empty dir noGenerators and returns the environment
// that a booted manager starts with: a standard PATH, and noGenerators as
// the only place to look for generators. The host's generators
// (environment.d readers, gpg-agent, xdg-autostart) are for the host's
// own managers and login sessions, and some take seconds, during which
// the manager answers nothing.
func managerEnv(noGenerators string) ([]string, error) {
	if err := os.MkdirAll(noGenerators, 0o755); err != nil {
		return nil, err
	}
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SYSTEMD_GENERATOR_PATH=" + noGenerators,
		"SYSTEMD_ENVIRONMENT_GENERATOR_PATH=" + noGenerators,
	}, nil
}
