package store

// Hold takes the lock of a database shared by several runs at once (a
// batch's, a server's, which commit together: GroupCommit): each use of
// such a database holds it, and Release lets it go. The runs' writers
// (CreateShared, ContinueShared) take it themselves, around their
// statements only; their callers hold it for anything else they do with
// the database. A database used by one goroutine at a time needs neither.
// Synced and the group's commits take the same lock.
func (db *DB) Hold() { db.mu.Lock() }

// Release lets go of the lock Hold took.
func (db *DB) Release() { db.mu.Unlock() }
