// Package pullexec is how unitrun has the unitrun-pull binary, installed
// beside it, do its registry work (package image/registry): pulls and
// taking a file out of an image. unitrun does not link image/registry,
// whose go-containerregistry brings inits (regexps, decompressors) that
// would cost every unitrun process, each job's and hook's, their time.
//
// unitrun-pull takes
//
//	unitrun-pull pull --image-dir DIR [--auth-file FILE] [--policy POLICY] REF
//	unitrun-pull extract --image-dir DIR [--auth-file FILE] [--policy POLICY] REF PATH
//
// (extract writes the file to its descriptor 3) and writes to its stdout
// one JSON [Line] per step, the last one its answer: the image, the file's
// mode or the error. It ends a pull that SIGINT or SIGTERM interrupts as
// Ctrl-C ends unitrun's: the next pull resumes it.
package pullexec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/unitrun/unitrun/image"
)

// Path is where unitrun-pull is for the unitrun binary at binary: beside
// it, named after it.
func Path(binary string) string { return binary + "-pull" }

// A Line is one line that unitrun-pull writes to its stdout.
type Line struct {
	Progress *image.Progress `json:"progress,omitempty"`
	Image    *image.Image    `json:"image,omitempty"`
	Mode     *fs.FileMode    `json:"mode,omitempty"`
	Error    *Error          `json:"error,omitempty"`
}

// An Error is a failure as unitrun-pull reports it: its message, and
// what errors.Is and errors.As tell of it, for Err to make it again.
type Error struct {
	Message string `json:"message"`
	// Reason is the name of the error, of [reasons], that it wraps.
	Reason string `json:"reason,omitempty"`
	// Ref and Detail are those of the *image.RefError (Kind "ref") or
	// *image.PullError (Kind "pull") that it wraps.
	Kind   string `json:"kind,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// reasons are the errors that callers tell apart with errors.Is, by the
// names an Error gives them, in the order they are looked for.
var reasons = []struct {
	name string
	err  error
}{
	{"unauthorized", image.ErrUnauthorized},
	{"unknown", image.ErrUnknown},
	{"unreachable", image.ErrUnreachable},
	{"full", image.ErrFull},
	{"notfound", image.ErrNotFound},
	{"notfile", image.ErrNotFile},
	{"notexist", fs.ErrNotExist},
	// A Ctrl-C reaches unitrun-pull as it reaches unitrun.
	{"canceled", context.Canceled},
}

// Encode returns err as unitrun-pull reports it.
func Encode(err error) *Error {
	e := &Error{Message: err.Error()}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			e.Reason = r.name
			break
		}
	}
	var re *image.RefError
	var pe *image.PullError
	switch {
	case errors.As(err, &re):
		e.Kind, e.Ref, e.Detail = "ref", re.Ref, re.Err.Error()
	case errors.As(err, &pe):
		e.Kind, e.Ref, e.Detail = "pull", pe.Ref, pe.Detail
	}
	return e
}

// Err makes the error that e reports again: its message, and the errors
// that errors.Is and errors.As found in it.
func (e *Error) Err() error {
	r := &reported{msg: e.Message}
	var reason error
	for _, x := range reasons {
		if x.name == e.Reason {
			reason = x.err
		}
	}
	switch e.Kind {
	case "ref":
		r.errs = append(r.errs, &image.RefError{Ref: e.Ref, Err: errors.New(e.Detail)})
	case "pull":
		r.errs = append(r.errs, &image.PullError{Ref: e.Ref, Reason: reason, Detail: e.Detail})
		reason = nil
	}
	if reason != nil {
		r.errs = append(r.errs, reason)
	}
	return r
}

// reported is an error that unitrun-pull reported.
type reported struct {
	msg  string
	errs []error
}

func (r *reported) Error() string   { return r.msg }
func (r *reported) Unwrap() []error { return r.errs }

// Pull has unitrun-pull, beside binary (unitrun), pull ref into the store
// in dir under o's Policy and AuthFile, calling o.Progress as it goes
// (o.Auth and o.Lease are the node's, which calls image/registry itself).
func Pull(ctx context.Context, binary, dir, ref string, o image.PullOptions) (*image.Image, error) {
	args := append([]string{"pull"}, flags(dir, o)...)
	last, err := run(ctx, binary, append(args, "--", ref), nil, o.Progress)
	if err != nil {
		return nil, err
	}
	if last.Image == nil {
		return nil, fmt.Errorf("%s answered no image", Path(binary))
	}
	return last.Image, nil
}

// ExtractFile has unitrun-pull, beside binary (unitrun), write to w the
// regular file at path p of image ref, from the store in dir or ref's
// registry under o's Policy and AuthFile, and returns its permission
// bits, as image/registry's ExtractFile.
func ExtractFile(ctx context.Context, binary, dir, ref, p string, o image.PullOptions, w *os.File) (fs.FileMode, error) {
	args := append([]string{"extract"}, flags(dir, o)...)
	last, err := run(ctx, binary, append(args, "--", ref, p), w, nil)
	if err != nil {
		return 0, err
	}
	if last.Mode == nil {
		return 0, fmt.Errorf("%s answered no file mode", Path(binary))
	}
	return *last.Mode, nil
}

func flags(dir string, o image.PullOptions) []string {
	return []string{"--image-dir", dir, "--auth-file", o.AuthFile, "--policy", string(o.Policy)}
}

// waitDelay is how long unitrun-pull has to end once interrupted, before
// it is killed.
const waitDelay = 10 * time.Second

// run runs unitrun-pull with args (and out as its descriptor 3), passing
// each progress line to progress, and returns its answer.
func run(ctx context.Context, binary string, args []string, out *os.File, progress func(image.Progress)) (*Line, error) {
	path := Path(binary)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("unitrun-pull, which pulls images, is missing: unitrun looks for it beside itself, at %s (install it with unitrun)", path)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	// unitrun-pull ends with unitrun, whatever ends unitrun (a SIGKILL
	// too): left running, it would go on pulling and hold the image's
	// lock against the next pull. The parent-death signal comes when the
	// thread that started the child exits, so this goroutine keeps that
	// thread until the child has ended.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.WaitDelay = waitDelay
	cmd.Stderr = os.Stderr
	if out != nil {
		cmd.ExtraFiles = []*os.File{out}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		// Start's error reads "fork/exec PATH: permission denied".
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("unitrun-pull, which pulls images, cannot be executed: %s: %w", path, err)
	}
	last, readErr := read(stdout, progress)
	waitErr := cmd.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	switch {
	case readErr != nil:
		return nil, fmt.Errorf("%s: %w", path, readErr)
	case last == nil:
		return nil, fmt.Errorf("%s ended without an answer: %v", path, waitErr)
	case last.Error != nil:
		return nil, last.Error.Err()
	case waitErr != nil:
		return nil, fmt.Errorf("%s: %w", path, waitErr)
	}
	return last, nil
}

// read reads unitrun-pull's lines from r, passing progress lines to
// progress, and returns the last other one.
func read(r io.Reader, progress func(image.Progress)) (*Line, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var last *Line
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("an answer that is not JSON: %q", sc.Bytes())
		}
		if l.Progress != nil {
			if progress != nil {
				progress(*l.Progress)
			}
			continue
		}
		last = &l
	}
	return last, sc.Err()
}
