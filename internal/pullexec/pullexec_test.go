package pullexec

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/unitrun/unitrun/image"
)

// An error that unitrun-pull reports is, once unitrun reads it, the same
// to unitrun's exit statuses and pods' checks: its message, and what
// errors.Is and errors.As find in it.
func TestErrorRoundTrip(t *testing.T) {
	refErr := &image.RefError{Ref: "Bad", Err: errors.New("a repository has only the characters ...")}
	pullErr := &image.PullError{Ref: "quay.io/x:1", Reason: image.ErrUnknown, Detail: "registry quay.io has no image x:1"}
	for _, err := range []error{
		refErr,
		pullErr,
		&image.PullError{Ref: "quay.io/x:1", Detail: "something else"},
		fmt.Errorf("quay.io/x:1 is not in the store and the pull policy is Never: %w", image.ErrNotFound),
		fmt.Errorf("/etc in quay.io/x:1: a directory, %w", image.ErrNotFile),
		fmt.Errorf("/nope in quay.io/x:1: %w", fs.ErrNotExist),
		errors.New("plain"),
		context.Canceled,
	} {
		got := Encode(err).Err()
		if got.Error() != err.Error() {
			t.Errorf("%v came back as %q", err, got)
		}
		for _, target := range []error{image.ErrNotFound, image.ErrUnknown, image.ErrNotFile, fs.ErrNotExist, image.ErrUnauthorized, context.Canceled} {
			if errors.Is(got, target) != errors.Is(err, target) {
				t.Errorf("%v came back as %v: errors.Is(%v) %v", err, got, target, errors.Is(got, target))
			}
		}
		var re *image.RefError
		if errors.As(err, &re) && (!errors.As(got, &re) || re.Error() != refErr.Error()) {
			t.Errorf("%v came back as %v, not its *image.RefError", err, got)
		}
		var pe *image.PullError
		if errors.As(err, &pe) {
			want := pe.Error()
			if !errors.As(got, &pe) || pe.Error() != want {
				t.Errorf("%v came back as %v, not its *image.PullError", err, got)
			}
		}
	}
}
