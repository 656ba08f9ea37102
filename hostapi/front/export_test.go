package front

// Conns returns how many connections of uid s counts.
func (s *Server) Conns(uid uint32) int {
	s.conns.mu.Lock()
	defer s.conns.mu.Unlock()
	return s.conns.byUID[uid]
}
