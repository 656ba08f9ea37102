package registry

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/unitrun/unitrun/image"
)

// pullError says in a user's words why a pull of r into s failed.
func pullError(s *image.Store, r name.Reference, keys *keychain, err error) error {
	host := r.Context().RegistryStr()
	e := &image.PullError{Ref: r.Name(), Detail: err.Error()}
	var te *transport.Error
	var ne net.Error
	var be *brokenError
	var pe *platformError
	var de *net.DNSError
	switch {
	case errors.As(err, &pe):
		e.Detail = pe.Error()
	case isFull(err):
		e.Reason, e.Detail = image.ErrFull, "the filesystem of "+s.Dir()+" is full"
	case errors.As(err, &be):
		e.Reason = image.ErrUnreachable
		e.Detail = "the connection to registry " + host + " broke while fetching layer " + be.layer + " (the next pull resumes)"
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode)):
		e.Reason, e.Detail = image.ErrUnauthorized, "registry "+host+" refused access "+keys.source(host)
	case errors.As(err, &te) && (te.StatusCode == http.StatusNotFound || hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode)):
		e.Reason, e.Detail = image.ErrUnknown, "registry "+host+" has no image "+strings.TrimPrefix(r.Name(), host+"/")
	case errors.As(err, &de):
		e.Reason, e.Detail = image.ErrUnreachable, "cannot reach registry "+host+": its host name "+de.Name+" could not be resolved (DNS)"
	case errors.As(err, &ne):
		e.Reason, e.Detail = image.ErrUnreachable, fmt.Sprintf("cannot reach registry %s: %v", host, err)
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
