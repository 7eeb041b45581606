package inspector

// FailJob records that the run id of database db, gone on with in the
// background, stopped with err: what a failed save (a full disk, a
// database another process holds too long) leaves.
func FailJob(s *Server, db int, id string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[key(db, id)] = &job{done: true, err: err}
}

// RowsRead is how many rows the queries of the server's database db have
// returned.
func RowsRead(s *Server, db int) int64 { return s.dbs[db].db.RowsRead() }
