package api

import "net/http"

// Codes of the errors the daemon returns to callers. They are stable: the
// HTTP front end serves them as {"error": {"code": ..., "message": ...}}
// and clients test them.
const (
	CodeUnknownOp    = "unknown_op"     // no op of that name (HTTP 404)
	CodeNotFound     = "not_found"      // no job of that id (HTTP 404)
	CodeBadArgs      = "bad_args"       // the args break the op's rule (HTTP 400)
	CodeBadRequest   = "bad_request"    // the request itself is malformed (HTTP 400)
	CodeUnauthorized = "unauthorized"   // the caller may not call the op (HTTP 403)
	CodeBusy         = "busy"           // an exclusive op runs, or too many jobs are live (HTTP 409)
	CodeKeyConflict  = "key_conflict"   // the call's key names a job of other args (HTTP 409)
	CodeTooLarge     = "too_large"      // the request is larger than max_request_bytes (HTTP 413)
	CodeNoCallerUnit = "no_caller_unit" // bind_to_caller: no unit holds the caller's pid (HTTP 412)
	CodeInternal     = "internal"       // the daemon failed (HTTP 500)

	CodeManagerUnavailable = "manager_unavailable" // the systemd manager cannot be reached (HTTP 503)
	CodeNoSpace            = "no_space"            // the state directory is full (HTTP 507)
	CodeMethodNotAllowed   = "method_not_allowed"  // the path is served, but not with that HTTP method (HTTP 405)
)

// ErrorBody is the body of an HTTP answer that is an error:
// {"error": {"code": ..., "message": ...}}.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// Error is an error the daemon returns to a caller: a stable Code and a
// Message that names the field and the rule at fault.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// HTTPStatus returns the HTTP status that serves the error.
func (e *Error) HTTPStatus() int {
	switch e.Code {
	case CodeUnknownOp, CodeNotFound:
		return http.StatusNotFound
	case CodeBadArgs, CodeBadRequest:
		return http.StatusBadRequest
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnauthorized:
		return http.StatusForbidden
	case CodeBusy, CodeKeyConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeNoCallerUnit:
		return http.StatusPreconditionFailed
	case CodeManagerUnavailable:
		return http.StatusServiceUnavailable
	case CodeNoSpace:
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}
