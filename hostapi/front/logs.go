package front

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/unitrun/unitrun/api"
)

func (h *httpAPI) logs(w http.ResponseWriter, r *http.Request) {
	rec, ok := h.visible(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	var follow bool
	if f := q.Get("follow"); f != "" {
		var err error
		if follow, err = strconv.ParseBool(f); err != nil {
			writeError(w, errorf(api.CodeBadRequest, "follow "+strconv.Quote(f)+": must be 1 or true (stream until the job ends), or 0 or false"))
			return
		}
	}
	var offset int64
	if o := q.Get("offset"); o != "" {
		n, err := strconv.ParseInt(o, 10, 64)
		if err != nil || n < 0 {
			writeError(w, errorf(api.CodeBadRequest, "offset "+strconv.Quote(o)+": must be a byte count, 0 or more"))
			return
		}
		offset = n
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	dw := &deadlineWriter{w: w, rc: rc, timeout: h.c.Config().Limits.WriteTimeout}
	h.c.CopyOutput(r.Context(), dw, rec.ID, offset, follow, func() { rc.Flush() })
}

// deadlineWriter gives each write to a response write_timeout to reach the
// caller, so that a caller that stops reading a stream has its connection
// closed instead of holding a goroutine and a file forever.
type deadlineWriter struct {
	w       io.Writer
	rc      *http.ResponseController
	timeout time.Duration
}

func (dw *deadlineWriter) Write(p []byte) (int, error) {
	dw.rc.SetWriteDeadline(time.Now().Add(dw.timeout))
	return dw.w.Write(p)
}
