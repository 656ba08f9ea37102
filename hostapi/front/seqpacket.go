package front

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/unitrun/unitrun/api"
	"github.com/unitrun/unitrun/hostapi/core"
)

// ServeSeqpacket serves the SOCK_SEQPACKET front end of s on l (a
// "unixpacket" unix socket's listener) until l is closed, then returns nil. Each
// connection carries one request packet (see ParseRequest) and gets one
// response packet (see EncodeResponse) once the job has ended: "ok" when
// it succeeded, else "error", the job id ("" when the call was refused)
// and a message: the exit status or what went wrong, with the error code
// first for a refused call ("unknown_op: ..."), and "; reboot required"
// appended when the op asked for a reboot. The op's output goes to the
// job's log. When the peer closes the connection before the job ends, an
// op with on_disconnect "stop" is canceled; a peer that only shut down
// its writing side still gets the answer.
func (s *Server) ServeSeqpacket(l net.Listener) error {
	g := s.guard(l, refuseSeqpacket)
	for {
		c, err := g.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		go serveSeqpacketConn(s.core, c.(*guardConn))
	}
}

// refuseSeqpacket answers a refused SEQPACKET connection with err and
// closes it, after reading its request packet within refuseGrace when
// wait is set (or one already sent when not).
func refuseSeqpacket(c *net.UnixConn, err error, wait bool) {
	defer c.Close()
	if wait {
		c.SetReadDeadline(time.Now().Add(refuseGrace))
		c.Read(make([]byte, 1))
	} else if raw, err := c.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_DONTWAIT) })
	}
	c.SetWriteDeadline(time.Now().Add(refuseGrace))
	c.Write(api.EncodeResponse(false, "", err.Error()))
}

// serveSeqpacketConn answers the call on conn and closes it.
func serveSeqpacketConn(c core.Core, conn *guardConn) {
	defer conn.Close()
	ok, id, msg := seqpacketCall(c, conn)
	conn.Write(api.EncodeResponse(ok, id, msg))
}

// seqpacketCall reads the request, runs the op and returns the response.
func seqpacketCall(d core.Core, c *guardConn) (ok bool, id, msg string) {
	caller := c.caller
	limits := d.Config().Limits
	limit := limits.MaxRequestBytes
	buf := make([]byte, limit+1)
	c.SetReadDeadline(time.Now().Add(limits.ReadHeaderTimeout))
	n, _, flags, _, err := c.ReadMsgUnix(buf, nil)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return false, "", errorf(api.CodeBadRequest, fmt.Sprintf("request: no packet within %v (read_header_timeout)", limits.ReadHeaderTimeout)).Error()
	case errors.Is(err, io.EOF):
		// A packet of no bytes (or a connection closed before its
		// packet), which api.ParseRequest names.
		n = 0
	case err != nil:
		return false, "", errorf(api.CodeBadRequest, "request: "+err.Error()).Error()
	case flags&unix.MSG_TRUNC != 0 || n > limit:
		return false, "", errorf(api.CodeTooLarge, fmt.Sprintf("request: packet larger than the limit of %d bytes (max_request_bytes)", limit)).Error()
	}
	c.SetReadDeadline(time.Time{})
	opName, args, err := api.ParseRequest(buf[:n], limit)
	if err != nil {
		return false, "", errorf(api.CodeBadRequest, err.Error()).Error()
	}
	// The peer has gone when it can no longer read the answer: one that
	// shut down its writing side after the request still waits for it.
	ctx, stop := watchHangup(c.UnixConn)
	defer stop()
	rec, err := d.CallKeyed(ctx, caller, opName, args, "")
	if err != nil {
		return false, "", err.Error()
	}
	release := d.Hold(rec.ID)
	final, err := d.Wait(ctx, rec.ID)
	release(err != nil && ctx.Err() != nil)
	if err != nil {
		return false, rec.ID, err.Error()
	}
	msg = final.Message
	if final.RebootRequired {
		msg += "; reboot required"
	}
	return final.State == api.StateSucceeded, final.ID, msg
}
