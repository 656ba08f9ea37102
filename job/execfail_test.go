package job_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/unitrun/unitrun/internal/systemdtest"
	"github.com/unitrun/unitrun/job"
)

// A command that systemd cannot execute (its 203/EXEC: the start job of a
// Type=exec run fails) is an *ExitError with the exit code a shell gives,
// 126 for a file in no format the kernel runs and 127 for a script whose
// #! interpreter is missing, and the errno that says why.
func TestExecFailureExitCode(t *testing.T) {
	conn := systemdtest.Conn(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, data string
		code       int
		errno      syscall.Errno
	}{
		{"badelf", "\x7fELFgarbage", 126, syscall.ENOEXEC},
		{"nointerp", "#!/nonexistent/interpreter\necho hi\n", 127, syscall.ENOENT},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.data), 0o755); err != nil {
			t.Fatal(err)
		}
		c := job.Command(conn, path)
		err := c.Run()
		var ee *job.ExitError
		if !errors.As(err, &ee) || ee.ExitCode != tc.code || !errors.Is(ee.ExecError, tc.errno) || ee.Result != "exit-code" || ee.Signal != 0 {
			t.Errorf("%s: %v (%T), status %+v; want an *ExitError with exit code %d, result exit-code and %v", tc.name, err, err, c.Status, tc.code, tc.errno)
		}
	}
}
