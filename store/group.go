package store

import (
	"errors"
	"fmt"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Group commit of the runs that share one database (a batch's runs, a
// server's): their writes go into one open write transaction, committed
// when groupWrites writes are in it, groupAge after the first of them, or
// when a caller needs them saved (Flush): a run before anything it does
// reaches outside the process (runners.Barrier), a batch before it writes
// an output line, a server before it answers. A kill loses what was not
// committed yet, which is what a run saved behind it (Writer.Background)
// loses: turns of injected responses, which play again the same, and the
// runs not yet answered for. Each write is a savepoint of its own, so one
// that fails leaves nothing and the others stand.
const (
	groupWrites = 512
	groupAge    = 2 * time.Millisecond
)

// group is the open transaction of GroupCommit.
type group struct {
	open   bool        // a write transaction is open
	writes int         // the writes in it
	turns  int         // the turns among them
	timer  *time.Timer // commits it groupAge after it opened
	closed bool
	// finish: a run's last save is committed at once (Writer.Finish), for
	// callers that read it through another connection.
	finish bool
	// err is the commit that failed: the writes it held are lost, and every
	// later write and Flush fails with it.
	err error
	// wrote counts the writes ever made, committed those committed (or
	// lost); committedCond (on the database's lock) is broadcast at each commit.
	wrote, committed uint64
	committedCond    sync.Cond
}

// GroupCommit has the writes of the runs that share db, each use of which
// holds its lock (Hold), committed together (see group). With finish, a
// run's last save (Writer.Finish) is committed before it returns. Writers
// do not write in the background (Background) on such a database: the
// group takes their turns without a commit each.
func (db *DB) GroupCommit(finish bool) {
	db.Hold()
	defer db.Release()
	if db.group == nil {
		db.group = &group{finish: finish}
		db.group.committedCond.L = &db.mu
	}
}

// Grouped reports whether db commits its runs' writes together.
func (db *DB) Grouped() bool { return db.group != nil }

// write runs f, which writes, in the group's open transaction (opening
// it) in a savepoint of its own, or without group commit in a transaction
// of its own (tx). turn counts the turns f saves.
func (db *DB) write(turns int, f func() error) error {
	if grouped, err := db.enter(); !grouped {
		return db.tx(f)
	} else if err != nil {
		return err
	}
	if err := db.exec("SAVEPOINT w"); err != nil {
		return db.lost(err)
	}
	if err := f(); err != nil {
		if rerr := errors.Join(db.exec("ROLLBACK TO w"), db.exec("RELEASE w")); rerr != nil {
			return db.lost(err) // SQLite rolled back the whole transaction
		}
		return err
	}
	if err := db.exec("RELEASE w"); err != nil {
		return db.lost(err)
	}
	return db.wrote(turns)
}

// enter readies a write in the group's open transaction (begin), or says
// that db does not commit its writes together (then each is a
// transaction of its own); err is the group's failed commit, or begin's.
func (db *DB) enter() (grouped bool, err error) {
	g := db.group
	if g == nil {
		return false, nil
	}
	if g.err != nil {
		return true, g.err
	}
	return true, db.begin()
}

// begin opens the group's transaction if none is open, and starts the
// timer that commits it.
func (db *DB) begin() error {
	g := db.group
	if g.open {
		return nil
	}
	if err := db.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	g.open = true
	if g.timer == nil {
		g.timer = time.AfterFunc(groupAge, func() { db.timedCommit(g) })
	} else {
		g.timer.Reset(groupAge)
	}
	return nil
}

// wrote counts a write that succeeded in the group's transaction, which
// it commits once it holds groupWrites.
func (db *DB) wrote(turns int) error {
	g := db.group
	g.writes++
	g.wrote++
	g.turns += turns
	if g.writes >= groupWrites {
		return db.Flush()
	}
	return nil
}

// write1 is write for an f that runs one statement, which SQLite makes
// atomic by itself: no savepoint around it, two statements fewer. A
// statement that fails leaves the transaction open and its other writes
// standing, unless its error is one after which SQLite may have rolled the
// whole transaction back (a full disk, an I/O error, …): then, as write,
// every write since the last commit is reported lost.
func (db *DB) write1(turns int, f func() error) error {
	if grouped, err := db.enter(); !grouped {
		return db.tx(f)
	} else if err != nil {
		return err
	}
	if err := f(); err != nil {
		if !statementOnly(err) {
			return db.lost(err)
		}
		return err
	}
	return db.wrote(turns)
}

// statementOnly reports whether SQLite undid only the statement that
// failed with err, leaving its transaction open: a constraint, a type or
// a size refused, a statement that does not prepare. Any other error (and
// one that is not SQLite's) may have ended the transaction.
func statementOnly(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_ERROR:
		return true
	}
	return false
}

// lost ends the group's transaction after an error that SQLite answers by
// rolling it back: the writes it held are gone, which every later write
// reports.
func (db *DB) lost(err error) error {
	g := db.group
	db.exec("ROLLBACK")
	g.open, g.writes, g.turns = false, 0, 0
	g.err = &Error{Path: db.path, Err: fmt.Errorf("the writes of the runs since the last commit are lost: %w", explain(err))}
	g.committed = g.wrote
	g.committedCond.Broadcast()
	return g.err
}

// Flush commits the writes the group holds, if any. The caller holds the
// database's lock (Hold).
func (db *DB) Flush() error {
	g := db.group
	if g == nil {
		return nil
	}
	if g.err != nil {
		return g.err
	}
	if !g.open {
		return nil
	}
	g.timer.Stop()
	turns := g.turns
	g.open, g.writes, g.turns = false, 0, 0
	err := db.exec("COMMIT")
	if err != nil {
		db.exec("ROLLBACK")
		g.err = &Error{Path: db.path, Err: fmt.Errorf("committing the writes of the runs: %w", explain(err))}
	}
	g.committed = g.wrote
	g.committedCond.Broadcast()
	if err != nil {
		return g.err
	}
	db.committed(turns)
	return nil
}

// Synced waits until every write made so far is committed, by the
// group's next commit (at most groupAge away) rather than one of its own:
// the callers that wait together share one. The caller holds the
// database's lock (Hold), which it lets go while it waits.
func (db *DB) Synced() error {
	g := db.group
	if g == nil {
		return nil
	}
	for n := g.wrote; g.committed < n && g.err == nil && !g.closed; {
		g.committedCond.Wait()
	}
	return g.err
}

// timedCommit is the group's timer: it commits what the group holds.
func (db *DB) timedCommit(g *group) {
	db.Hold()
	defer db.Release()
	if !g.closed && db.group == g {
		db.Flush()
	}
}

// closeGroup commits what the group holds and stops its timer (Close,
// whose caller holds the database's lock).
func (db *DB) closeGroup() error {
	g := db.group
	if g == nil {
		return nil
	}
	err := db.Flush()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
	g.committedCond.Broadcast()
	return err
}
