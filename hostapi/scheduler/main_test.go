package scheduler

import (
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// TestMain boots the real systemd user manager the tests of this package
// run against.
func TestMain(m *testing.M) { systemdtest.Main(m) }
