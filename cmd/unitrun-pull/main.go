// Command unitrun-pull does unitrun's registry work: it pulls images into
// the image store and takes a file out of an image, with package
// image/registry (go-containerregistry), which unitrun does not link, so
// that its inits cost no job or hook unitrun runs. unitrun looks for it
// beside itself and runs it for `unitrun image pull`, `unitrun inject
// --image` and the images of `unitrun pod create|run`; its command line and
// its answers, JSON lines on stdout, are unitrun's own (package
// internal/pullexec), not an interface for users.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/unitrun/unitrun/image"
	"github.com/unitrun/unitrun/image/registry"
	"github.com/unitrun/unitrun/internal/pullexec"
)

// usage is what a user who runs unitrun-pull by hand is told: unitrun
// runs it.
const usage = `unitrun-pull does unitrun's registry work; unitrun runs it, beside itself,
for "unitrun image pull", "unitrun inject --image" and the images of
"unitrun pod create|run". Use those commands.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] != "pull" && os.Args[1] != "extract" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	if err := run(ctx, os.Args[1:], enc); err != nil {
		enc.Encode(pullexec.Line{Error: pullexec.Encode(err)})
		stop()
		os.Exit(1)
	}
}

// run does what args ask, writing its lines to enc.
func run(ctx context.Context, args []string, enc *json.Encoder) error {
	fl := flag.NewFlagSet("unitrun-pull "+args[0], flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	dir := fl.String("image-dir", "", "")
	authFile := fl.String("auth-file", "", "")
	policy := fl.String("policy", "", "")
	if err := fl.Parse(args[1:]); err != nil {
		return err
	}
	s, err := image.Open(*dir)
	if err != nil {
		return err
	}
	o := image.PullOptions{Policy: image.PullPolicy(*policy), AuthFile: *authFile}
	switch {
	case args[0] == "pull" && fl.NArg() == 1:
		o.Progress = func(p image.Progress) { enc.Encode(pullexec.Line{Progress: &p}) }
		img, err := registry.Pull(ctx, s, fl.Arg(0), o)
		if err != nil {
			return err
		}
		return enc.Encode(pullexec.Line{Image: img})
	case args[0] == "extract" && fl.NArg() == 2:
		out := os.NewFile(3, "the file taken out of the image")
		mode, err := registry.ExtractFile(ctx, s, fl.Arg(0), fl.Arg(1), o, out)
		if err != nil {
			return err
		}
		return enc.Encode(pullexec.Line{Mode: &mode})
	}
	return fmt.Errorf("usage: unitrun-pull pull|extract ... REF [PATH], not %q", args)
}
