package api

import (
	"encoding/json"
	"testing"
)

// The error body is the documented {"error": {"code", "message"}}.
func TestErrorBody(t *testing.T) {
	b, err := json.Marshal(ErrorBody{Error: &Error{Code: CodeNotFound, Message: `job "x": no such job`}})
	if want := `{"error":{"code":"not_found","message":"job \"x\": no such job"}}`; err != nil || string(b) != want {
		t.Errorf("Marshal = %s, %v; want %s", b, err, want)
	}
}
