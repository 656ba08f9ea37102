package hostapi

import (
	"errors"
	"syscall"
)

// storeRefusal is the error a call gets when its job cannot be stored: an
// *Error with CodeNoSpace when the state directory's filesystem is full
// (or over quota), else CodeInternal.
func storeRefusal(err error) *Error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return errorf(CodeNoSpace, "the state directory is full, so the job cannot be recorded and nothing was started: "+err.Error())
	}
	return errorf(CodeInternal, err.Error())
}
