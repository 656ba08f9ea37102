package front

import "net"

// ServeSeqpacketOn serves the SEQPACKET front end on l, any listener, as
// ServeSeqpacket does on a socket.
func (s *Server) ServeSeqpacketOn(l net.Listener) error {
	return s.serveSeqpacket(s.guard(l, refuseSeqpacket))
}

// Conns returns how many connections of uid s counts.
func (s *Server) Conns(uid uint32) int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.byUID[uid]
}
