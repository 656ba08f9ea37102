package registry_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/registry"
)

// TestMain runs, in a process of its own, the pull that pullProcess
// asks for.
func TestMain(m *testing.M) {
	if dir := os.Getenv("IMAGE_TEST_STORE"); dir != "" {
		ref := os.Getenv("IMAGE_TEST_REF")
		s, err := image.Open(dir)
		if err == nil {
			// Tells the test that this process is about to pull.
			err = os.WriteFile(filepath.Join(os.Getenv("IMAGE_TEST_READY"), fmt.Sprint(os.Getpid())), nil, 0o600)
		}
		if err == nil {
			_, err = registry.Pull(context.Background(), s, ref, image.PullOptions{})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pullProcess returns a command that pulls ref into the store in dir in
// a process of its own, which writes a file in ready just before.
func pullProcess(dir, ref, ready string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "IMAGE_TEST_STORE="+dir, "IMAGE_TEST_REF="+ref, "IMAGE_TEST_READY="+ready)
	cmd.Stderr = os.Stderr
	return cmd
}
