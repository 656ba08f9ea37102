package job_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"syscall"

	"github.com/unitrun/unitrun/job"
	"github.com/unitrun/unitrun/manager"
)

func Example() {
	ctx := context.Background()
	// "" is $UNITRUN_MANAGER, else auto: the system manager, the user's,
	// or an embedded one.
	mgr, err := manager.Open(ctx, "", manager.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer mgr.Close()

	out, err := job.CommandContext(ctx, mgr, "sh", "-c", "echo hello; exit 3").Output()
	var ee *job.ExitError
	if errors.As(err, &ee) {
		fmt.Printf("%q exit code %d, result %s\n", out, ee.ExitCode, ee.Result)
	}
	// Output: "hello\n" exit code 3, result exit-code
}

func ExampleExitError_signal() {
	mgr, err := manager.Open(context.Background(), "", manager.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer mgr.Close()

	// systemd calls a SIGTERM death of a service a success; unitrun still
	// says how it ended.
	err = job.Command(mgr, "sh", "-c", "kill -TERM $$").Run()
	var ee *job.ExitError
	if errors.As(err, &ee) {
		fmt.Println(ee.Signal == syscall.SIGTERM, ee.ExitCode, ee.Result)
	}
	// Output: true 143 success
}
