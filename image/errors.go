package image

import (
	"errors"
	"fmt"
)

// What can go wrong in a pull, for callers to tell apart with errors.Is
// (the CLI's exit statuses, the node's waiting reasons).
var (
	// ErrUnauthorized: the registry wants credentials it was not given,
	// or refused those it was.
	ErrUnauthorized = errors.New("the registry refused access")
	// ErrUnknown: the registry has no image of that name, tag or digest.
	ErrUnknown = errors.New("the registry has no such image")
	// ErrUnreachable: the registry could not be reached.
	ErrUnreachable = errors.New("the registry cannot be reached")
	// ErrFull: the store's filesystem is full.
	ErrFull = errors.New("no space left for the image store")
)

// A PullError is a pull that failed at the registry or in the store.
type PullError struct {
	Ref    string // the normalized reference
	Reason error  // one of the Err values above, or nil
	Detail string // what went wrong, in a user's words
}

func (e *PullError) Error() string {
	return fmt.Sprintf("pulling %s: %s", e.Ref, e.Detail)
}

func (e *PullError) Unwrap() error { return e.Reason }

// ErrNotFile is the error of taking a file out of an image at a path
// that is not a regular file in the image.
var ErrNotFile = errors.New("not a regular file of the image")
