package main

import (
	"bytes"
	"net/http"
	"strings"
)

// vkLogsPrefix is what virtual-kubelet's containerLogs handler puts before
// the provider's error (node/api/logs.go: errors.Wrap(err, "error getting
// container logs?)")).
const vkLogsPrefix = "error getting container logs?): "

// kubeletLogErrors serves h, answering a failed containerLogs request
// with the provider's message alone, as the kubelet answers it (kubectl
// shows it: "container \"c\" in pod \"p\" is waiting to start:
// ContainerCreating"), without virtual-kubelet's prefix.
func kubeletLogErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/containerLogs/") {
			w = &trimPrefixWriter{ResponseWriter: w}
		}
		h.ServeHTTP(w, r)
	})
}

// trimPrefixWriter drops vkLogsPrefix from the start of an error's body.
type trimPrefixWriter struct {
	http.ResponseWriter
	failed, written bool
}

func (t *trimPrefixWriter) WriteHeader(code int) {
	t.failed = code >= http.StatusBadRequest
	t.ResponseWriter.WriteHeader(code)
}

func (t *trimPrefixWriter) Write(b []byte) (int, error) {
	if t.failed && !t.written {
		t.written = true
		n := len(b)
		_, err := t.ResponseWriter.Write(bytes.TrimPrefix(b, []byte(vkLogsPrefix)))
		return n, err
	}
	t.written = true
	return t.ResponseWriter.Write(b)
}

// Flush flushes the logs as they stream (kubectl logs -f).
func (t *trimPrefixWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
