package scheduler

import (
	"github.com/unitrun/unitrun/api"
)

func errorf(code, msg string) *api.Error { return &api.Error{Code: code, Message: msg} }
