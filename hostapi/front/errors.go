package front

import (
	"errors"

	"github.com/unitrun/unitrun/api"
)

func errorf(code, msg string) *api.Error { return &api.Error{Code: code, Message: msg} }

// asError returns err as an *api.Error; one that is not is an internal error.
func asError(err error) *api.Error {
	var e *api.Error
	if !errors.As(err, &e) {
		e = errorf(api.CodeInternal, err.Error())
	}
	return e
}
