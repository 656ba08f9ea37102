package scheduler

import (
	"errors"
	"syscall"

	"github.com/unitrun/unitrun/api"
)

// storeRefusal is the error a call gets when its job cannot be stored: an
// *Error with CodeNoSpace when the state directory's filesystem is full
// (or over quota), else CodeInternal.
func storeRefusal(err error) *api.Error {
	return refusal(err, "the state directory is full, so the job cannot be recorded and nothing was started: ")
}

// commitRefusal is the error of a call whose job started but whose record
// could not be made durable, so that the job was canceled.
func commitRefusal(err error) *api.Error {
	return refusal(err, "the state directory is full, so the job's record cannot be made durable and the job was canceled: ")
}

func refusal(err error, full string) *api.Error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return errorf(api.CodeNoSpace, full+err.Error())
	}
	return errorf(api.CodeInternal, err.Error())
}
