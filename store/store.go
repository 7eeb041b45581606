// Package store keeps durable runs in an SQLite database
// (docs/semantics.md#durable-runs): `ensemble run --state FILE` writes a
// row per completed turn holding only what the turn added, so the cost of a
// save does not grow with the run, in a transaction of its own or, for
// turns that come faster than SQLite commits, with them (Writer.Background).
// A database holds any number of runs, each named by an id; one process at
// a time writes a run.
//
// The database is opened through database/sql and modernc.org/sqlite, a
// pure Go SQLite: no C compiler is needed. store.go opens it (migrating an
// older schema), file.go checks a file before SQLite opens it and makes run
// ids, statements.go runs the statements and transactions, read.go reads
// runs back, write.go, group.go and behind.go write them, batch.go keeps
// batches, lock.go the runs' locks.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ensemble-run/ensemble/state"
)

// Header is how every SQLite database file starts: a state file that
// starts otherwise is a JSON state file (package state).
const Header = "SQLite format 3\x00"

// applicationID marks a database as an ensemble state database (PRAGMA
// application_id, "ens1"); schemaVersion is PRAGMA user_version.
// Version 1 kept turns in a table without rowid keyed by (run, turn):
// SQLite then rebalanced the last leaf pages at nearly every insert, and a
// turn wrote about four pages to the WAL. Version 2 keys a turn by one
// integer, run<<32 | turn, so a turn appends to the last leaf page (1.3
// pages a turn in a loop of small turns). Version 3 adds to a run its
// parent: the run and turn it was forked from (DB.Fork). Version 4 adds to
// a run what it reported of the turn it cut short when it ended (stopped:
// the errors of a run stopped by a budget, say, which no turn holds). A
// database of an earlier version is migrated when it is opened (migrate);
// a release that knows an earlier version only refuses a database of a
// later one.
const (
	applicationID = 0x656e7331
	schemaVersion = 4
)

// The schema. A run is a row of runs with the state it started from
// (snapshot, a JSON state; turn base), then a row of turns per completed
// turn after it, holding only what that turn changed, and its warnings in
// warnings. Loading a run replays its turns over the snapshot.
const schema = runsTable + turnsTable + warningsTable

const runsTable = `
CREATE TABLE runs (
	seq               INTEGER PRIMARY KEY, -- also the offset of the run's lock
	id                TEXT NOT NULL UNIQUE,
	ensemble          TEXT NOT NULL,       -- JSON state.FileRef
	responses         TEXT,                -- JSON state.FileRef, or NULL
	profiles          TEXT,                -- JSON list of paths, or NULL
	options           TEXT NOT NULL,       -- JSON state.Options
	started_at        TEXT NOT NULL,       -- RFC 3339, UTC
	saved_at          TEXT NOT NULL,
	completion_reason TEXT NOT NULL DEFAULT '',
	base              INTEGER NOT NULL,    -- the turn count of snapshot
	snapshot          TEXT NOT NULL,       -- JSON state.State
	parent            TEXT,                -- the id of the run it was forked from, or NULL
	parent_turn       INTEGER NOT NULL DEFAULT 0, -- the turn of parent it was forked at
	stopped           TEXT                 -- JSON state.Stopped of a run that ended cutting a turn short, or NULL
);
`

const turnsTable = `
CREATE TABLE turns (
	key      INTEGER PRIMARY KEY, -- run << 32 | turn: the run's turns in order, appended
	run      INTEGER NOT NULL,
	turn     INTEGER NOT NULL,
	records  TEXT NOT NULL, -- JSON list of the turn's history records
	counts   TEXT NOT NULL, -- JSON {agent: [executions, outputs]} of the agents that ran
	context  TEXT,          -- JSON [[state key, value], ...] of the outputs the turn added
	edges    TEXT,          -- JSON {target: {dependency: {triggered, consumed}}} of the agents that ran
	memory   TEXT,          -- JSON {agent: memory} of the agents whose memory changed
	pending  TEXT,          -- JSON list of the pending agent requests after the turn, or NULL: none
	saved_at TEXT NOT NULL  -- RFC 3339, UTC
);
`

const warningsTable = `
CREATE TABLE warnings (
	run     INTEGER NOT NULL,
	idx     INTEGER NOT NULL,
	warning TEXT NOT NULL, -- JSON state.Warning
	PRIMARY KEY (run, idx)
) WITHOUT ROWID;
`

// Error is a database that cannot be used: corrupt, truncated, not an
// ensemble state database, or of an unknown version. It names the file, as
// the error of a JSON state file does: it is that type.
type Error = state.FileError

// ErrNoSchema is an SQLite database without tables: a foreign one, or one
// whose first run was killed before it wrote anything. Reading runs never
// turns it into a state database; run --state does.
var ErrNoSchema = errors.New("an SQLite database with no tables, not an ensemble state database: it holds no runs (a run stopped as it created the file saved none; run --state with this file starts a run in it)")

// ErrLocked is returned when another process is writing the run.
var ErrLocked = errors.New("another ensemble process is running it")

// ErrNoRun is wrapped by the error for a run id the database does not hold.
var ErrNoRun = errors.New("no run")

// Sync is the SQLite synchronous mode of the writes: "normal" (the
// default) or "full" ($ENSEMBLE_STATE_SYNC, docs/semantics.md#durable-runs).
type Sync string

const (
	SyncNormal Sync = "normal" // a committed turn survives a killed process
	SyncFull   Sync = "full"   // and a power cut: one fsync per turn
)

// IsDatabase reports whether the file at path is an SQLite database, by
// its first bytes. A file that does not exist, or is empty, is not.
func IsDatabase(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(Header))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return n == len(Header) && string(head) == Header, nil
}

// DB is an open state database.
type DB struct {
	path  string    // as given, for messages
	file  string    // symbolic links resolved, absolute
	sqldb *sql.DB   // of one connection, conn
	conn  *sql.Conn // every statement runs on it, in turn
	lock  *os.File  // the database file, opened for the runs' locks
	ctx   context.Context
	sync  Sync
	// commits counts the write transactions committed (what the tests of
	// group commit read), turns the turns they saved, which set the pace
	// of flush, the WAL written to the disk in the background (flush.go).
	commits, turns int
	flush          *flusher
	// behind is the writer in the background (Writer.Background), if any,
	// which Close stops before it closes the connection it writes on.
	behind *Writer
	// stmts holds the statements exec and query prepared, by their SQL:
	// SQLite parses a statement in tens of microseconds, a batch runs the
	// same dozen of them for each of its inputs.
	stmts map[string]*sql.Stmt
	// group commits the writes of the runs that share the database
	// together (GroupCommit), or is nil.
	group *group
	// rowsRead counts the rows query returned (RowsRead).
	rowsRead atomic.Int64
	// mu is the lock of a database shared by several runs (Hold).
	mu sync.Mutex
}

// RowsRead is how many rows the queries of db have returned so far: what
// a lookup costs, for the tests of the indexed ones.
func (db *DB) RowsRead() int64 { return db.rowsRead.Load() }

// turnsOf is the SQL condition that selects the turns of the run whose
// seq is the SQL expression seq (by their key, in order).
func turnsOf(seq string) string {
	return "key BETWEEN (" + seq + ") << 32 AND ((" + seq + ") << 32) + 4294967295"
}

// maxTurn is the highest turn a run can have: its number is the low 32
// bits of the key.
const maxTurn = 1<<32 - 1

// Open opens the state database at path. With create, a missing (or empty)
// file becomes a new database, with mode 0600 (it holds conversations);
// without, it must exist. Every problem is an *Error naming the file.
func Open(path string, create bool, sync Sync) (*DB, error) {
	file, err := state.ResolvePath(path)
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Path: path, Err: fmt.Errorf("cannot create it: the folder %s does not exist", filepath.Dir(file))}
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, &Error{Path: path, Err: unwrapPath(err)}
		}
		if f != nil {
			f.Close()
		}
	case err != nil:
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	case fi.IsDir():
		return nil, &Error{Path: path, Err: errors.New("is a directory")}
	case fi.Size() == 0 && !create:
		return nil, &Error{Path: path, Err: state.ErrEmptyFile}
	case fi.Size() > 0:
		if ok, err := IsDatabase(file); err != nil {
			return nil, &Error{Path: path, Err: unwrapPath(err)}
		} else if !ok {
			return nil, &Error{Path: path, Err: errors.New("not an SQLite database")}
		}
		if err := checkHeader(file); err != nil {
			return nil, &Error{Path: path, Err: err}
		}
		if err := checkSize(file); err != nil {
			return nil, &Error{Path: path, Err: err}
		}
	}
	if sync == "" {
		sync = SyncNormal
	}
	lock, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return nil, &Error{Path: path, Err: unwrapPath(err)}
	}
	dsn := "file:" + (&url.URL{Path: file}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=synchronous(" + string(sync) + ")"
	// Processes opening a new database at once race to create it and to
	// turn on WAL; SQLite answers some of those races SQLITE_BUSY at once,
	// without its busy timeout (to avoid a deadlock): try again a while.
	deadline := time.Now().Add(openWait)
	for {
		db, err := open(path, file, dsn, lock, sync)
		if err == nil {
			if err = db.init(create); err == nil { // init's errors are explained
				return db, nil
			}
			db.closeConn()
		}
		if !isBusy(err) || time.Now().After(deadline) {
			lock.Close()
			return nil, &Error{Path: path, Err: err}
		}
		time.Sleep(openWait / 200)
	}
}

// open opens the one connection of a database.
func open(path, file, dsn string, lock *os.File, sync Sync) (*DB, error) {
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, explain(err)
	}
	sqldb.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		sqldb.Close()
		return nil, explain(err)
	}
	return &DB{path: path, file: file, sqldb: sqldb, conn: conn, lock: lock, ctx: ctx, sync: sync}, nil
}

// openWait is how long Open tries again while the database is busy.
const openWait = 10 * time.Second

// isBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// Close closes the database, releasing the locks of its runs; a writer
// still in the background (Writer.Background) writes what it holds first,
// and the error of a write of it that failed is returned. A database
// whose runs commit together (GroupCommit) commits what it holds; its
// caller holds the group's lock.
func (db *DB) Close() error {
	var behindErr error
	if w := db.behind; w != nil {
		behindErr = w.stopBehind()
	}
	behindErr = errors.Join(behindErr, db.closeGroup())
	if db.flush != nil {
		db.flush.stop()
		db.flush = nil
	}
	err := db.closeConn()
	db.lock.Close()
	return errors.Join(behindErr, err)
}

// closeConn closes the statements db prepared, then its connection: SQLite
// cannot free a connection whose statements are open, which would keep its
// files, and then the WAL that its close removes, behind.
func (db *DB) closeConn() error {
	for _, st := range db.stmts {
		st.Close()
	}
	db.stmts = nil
	return errors.Join(db.conn.Close(), db.sqldb.Close())
}

// Path is the database's path as it was given.
func (db *DB) Path() string { return db.path }

// init creates the schema in a new database (with create) and checks an
// existing one. Without create, an SQLite database with no tables is not a
// state database: it is never turned into one.
func (db *DB) init(create bool) error {
	// One statement, so one snapshot: read apart, the two could straddle
	// another process's creating the database, whose tables would then
	// seem to lack their application id.
	rows, err := db.query(`SELECT count(*), (SELECT application_id FROM pragma_application_id) FROM sqlite_schema`)
	if err != nil {
		return err
	}
	app := rows[0][1].(int64)
	if rows[0][0].(int64) == 0 && app == 0 {
		if !create {
			return ErrNoSchema
		}
		// WAL mode (kept in the file) before the tables, so that a file
		// with the tables is in WAL mode; not before the file is known to
		// be new or ours: a foreign database is left as it was.
		if err := db.exec(`PRAGMA journal_mode = WAL`); err != nil {
			return err
		}
		err := db.tx(func() error {
			// Another process may have created it meanwhile: look again
			// under the write lock.
			rows, err := db.query(`SELECT count(*) FROM sqlite_schema`)
			if err != nil || rows[0][0].(int64) > 0 {
				return err
			}
			return db.script(schema + fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d;", applicationID, schemaVersion))
		})
		if err != nil {
			return err
		}
		// Check it as an existing database: whoever created it, this
		// process or another one meanwhile, its version is read.
		return db.init(false)
	}
	if app != applicationID {
		return errors.New("an SQLite database, but not an ensemble state database")
	}
	version, err := db.version()
	if err != nil {
		return err
	}
	if version < 1 || version > schemaVersion {
		return fmt.Errorf("%w %d: this ensemble reads versions 1 to %d (was it written by another release?)", state.ErrUnknownVersion, version, schemaVersion)
	}
	// Every state database is in WAL mode already (see above): this reads
	// the mode, and changes it only for a file that lost it.
	if err := db.exec(`PRAGMA journal_mode = WAL`); err != nil {
		return err
	}
	if version < schemaVersion {
		return db.migrate()
	}
	return nil
}

// version is the database's schema version (PRAGMA user_version).
func (db *DB) version() (int64, error) {
	rows, err := db.query(`PRAGMA user_version`)
	if err != nil {
		return 0, err
	}
	return rows[0][0].(int64), nil
}

// migrations[v] brings a database of version v to version v+1.
var migrations = map[int64]string{
	// The turns move to the table keyed by run<<32 | turn.
	1: `
ALTER TABLE turns RENAME TO turns_v1;
` + turnsTable + `
INSERT INTO turns (key, run, turn, records, counts, context, edges, memory, pending, saved_at)
	SELECT (run << 32) | turn, run, turn, records, counts, context, edges, memory, pending, saved_at FROM turns_v1 ORDER BY run, turn;
DROP TABLE turns_v1;
PRAGMA user_version = 2;`,
	// A run gains its parent (none: the runs of an older database are no
	// forks).
	2: `
ALTER TABLE runs ADD COLUMN parent TEXT;
ALTER TABLE runs ADD COLUMN parent_turn INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 3;`,
	// A run gains what it reported of the turn it cut short (none: a run
	// of an older database shows the errors of its committed turns).
	3: `
ALTER TABLE runs ADD COLUMN stopped TEXT;
PRAGMA user_version = 4;`,
}

// migrate brings a database of an earlier version to schemaVersion, in
// one transaction, a step a version. Another process may have done it
// meanwhile: the version is read again under the write lock.
func (db *DB) migrate() error {
	from := int64(0)
	err := db.tx(func() error {
		v, err := db.version()
		if err != nil {
			return err
		}
		from = v
		for ; v < schemaVersion; v++ {
			if err := db.script(migrations[v]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating the database from version %d to %d: %w", from, schemaVersion, err)
	}
	return nil
}
