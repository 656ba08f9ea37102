package image

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
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

// pullError says in a user's words why a pull of r failed.
func (s *Store) pullError(r name.Reference, keys *keychain, err error) error {
	host := r.Context().RegistryStr()
	e := &PullError{Ref: r.Name(), Detail: err.Error()}
	var te *transport.Error
	var ne net.Error
	switch {
	case isFull(err):
		e.Reason, e.Detail = ErrFull, "the filesystem of "+s.dir+" is full"
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode)):
		e.Reason, e.Detail = ErrUnauthorized, "registry "+host+" refused access "+keys.source(host)
	case errors.As(err, &te) && (te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode)):
		e.Reason, e.Detail = ErrUnknown, "registry "+host+" has no image "+strings.TrimPrefix(r.Name(), host+"/")
	case errors.As(err, &ne):
		e.Reason, e.Detail = ErrUnreachable, fmt.Sprintf("cannot reach registry %s: %v", host, err)
		var oe *net.OpError
		if errors.As(err, &oe) {
			e.Detail = fmt.Sprintf("cannot reach registry %s: %v", host, oe.Err)
		}
	}
	return e
}

// hasCode reports whether the registry's answer holds one of codes.
func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
