package store

// The statements: run, prepared once and kept, inside transactions.

import (
	"database/sql"
	"errors"
	"fmt"
	"os"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// explain turns SQLite's errors about a damaged file into one a user can
// act on.
func explain(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT:
			return fmt.Errorf("the database is corrupt or truncated (%w)", err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("the database is busy: another process holds it too long (%w)", err)
		}
	}
	return err
}

// exec runs the statement q (one statement: see script).
func (db *DB) exec(q string, args ...any) error {
	st, err := db.prepared(q)
	if err == nil {
		_, err = st.ExecContext(db.ctx, args...)
	}
	return explain(err)
}

// script runs q, which may hold several statements, unprepared.
func (db *DB) script(q string) error {
	_, err := db.conn.ExecContext(db.ctx, q)
	return explain(err)
}

// prepared returns the statement q, prepared the first time it is asked
// for. A statement that fails to prepare (a table not there yet) is not
// kept.
func (db *DB) prepared(q string) (*sql.Stmt, error) {
	if st, ok := db.stmts[q]; ok {
		return st, nil
	}
	st, err := db.conn.PrepareContext(db.ctx, q)
	if err != nil {
		return nil, err
	}
	if db.stmts == nil {
		db.stmts = map[string]*sql.Stmt{}
	}
	db.stmts[q] = st
	return st, nil
}

// query runs the statement q and returns all its rows: each column as the
// driver gives it (int64, string, []byte, nil).
func (db *DB) query(q string, args ...any) ([][]any, error) {
	st, err := db.prepared(q)
	if err != nil {
		return nil, explain(err)
	}
	rows, err := st.QueryContext(db.ctx, args...)
	if err != nil {
		return nil, explain(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, explain(err)
	}
	var out [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, explain(err)
		}
		out = append(out, row)
	}
	db.rowsRead.Add(int64(len(out)))
	return out, explain(rows.Err())
}

// tx runs f in a write transaction (BEGIN IMMEDIATE: the write lock is
// taken at once, so that two processes never deadlock upgrading).
func (db *DB) tx(f func() error) error {
	if err := db.Flush(); err != nil { // a group's transaction first (GroupCommit)
		return err
	}
	if err := db.exec("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := f(); err != nil {
		db.exec("ROLLBACK")
		return err
	}
	if err := db.exec("COMMIT"); err != nil {
		db.exec("ROLLBACK")
		return err
	}
	return nil
}

// tx2 is tx with prepared BEGIN and COMMIT statements.
func (db *DB) tx2(begin, commit *sql.Stmt, f func() error) error {
	if _, err := begin.ExecContext(db.ctx); err != nil {
		return err
	}
	if err := f(); err != nil {
		db.exec("ROLLBACK")
		return err
	}
	if _, err := commit.ExecContext(db.ctx); err != nil {
		db.exec("ROLLBACK")
		return err
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
