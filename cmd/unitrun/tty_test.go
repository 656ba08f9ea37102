package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/internal/systemdtest"
)

// unitrunTTY runs the CLI with stdout and stderr on a pseudo-terminal of
// 40 rows and 200 columns, with TERM=xterm, NO_COLOR unset and env added,
// and returns what the terminal received (without the \r the terminal
// adds before each \n) and the exit status.
func unitrunTTY(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal("unlockpt:", err)
	}
	n, err := unix.IoctlGetUint32(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal("ptsname:", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 200}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(systemdtest.Binary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NO_COLOR=") && !strings.HasPrefix(kv, "TERM=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "TERM=xterm"), env...)
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, ptmx)
		copied <- err
	}()
	err = cmd.Wait()
	// The terminal's last reader gets EIO once every holder of its other
	// end has closed it.
	if cerr := <-copied; cerr != nil && !errors.Is(cerr, syscall.EIO) {
		t.Fatal(cerr)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(out.String(), "\r\n", "\n"), code
}

// escapes matches the terminal escape sequences unitrun writes.
var escapes = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

// stamp matches the timestamp that starts a progress line off a terminal.
var stampRE = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `)
