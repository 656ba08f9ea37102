package front

import (
	"log/slog"

	"github.com/unitrun/unitrun/hostapi/core"
	"github.com/unitrun/unitrun/hostapi/internal/loglimit"
)

// A Server serves the HTTP and SEQPACKET front ends of one Core. It holds
// each caller uid to the connection limits of the Core's config over both
// sockets together (connCounter), and logs each refused connection at
// level warn, at most a line a second for each reason.
type Server struct {
	core     core.Core
	conns    *connCounter
	log      *slog.Logger
	logLimit loglimit.Limiter
}

// NewServer returns the Server of c, logging to log.
func NewServer(c core.Core, log *slog.Logger) *Server {
	return &Server{core: c, conns: newConnCounter(c.Config().Limits.MaxConnectionsPerUID, connBudget()), log: log}
}
