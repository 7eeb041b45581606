package mcptools

import "github.com/ensemble-run/ensemble/ensemble"

// PID is the process of a started command server, 0 when none.
func PID(s *Servers, d *ensemble.MCPServer) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv := s.byDecl[d]; srv != nil && srv.cmd != nil && srv.cmd.Process != nil {
		return srv.cmd.Process.Pid
	}
	return 0
}
