package store

// Hold takes the lock of a database shared by several runs at once (a
// batch's, a server's, which commit together: GroupCommit): each use of
// such a database, by its runs' writers and by their caller, holds it, and
// Release lets it go. A database used by one goroutine at a time needs
// neither. Synced and the group's commits take the same lock.
func (db *DB) Hold() { db.mu.Lock() }

// Release lets go of the lock Hold took.
func (db *DB) Release() { db.mu.Unlock() }
