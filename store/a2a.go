package store

import (
	"errors"
	"strconv"
	"time"
)

// The A2A endpoint of `ensemble serve` keeps its tasks (an A2A task is a
// run: the task's id is the run's) and their push notification configs in
// the state database, so that every server process on it agrees and a task
// outlives the server. A task is written whole, as the JSON the protocol
// gives it, with a version: an update names the version it was made from,
// and one made from an older version than the row's is refused
// (ErrStaleTask), never merged.
//
// The tables are made the first time the endpoint opens the database
// (InitTasks), so databases never served over A2A are as they were.
const taskSchema = `
CREATE TABLE IF NOT EXISTS a2a_tasks (
	id         TEXT NOT NULL PRIMARY KEY, -- the run's id
	context_id TEXT NOT NULL,
	state      TEXT NOT NULL,
	version    INTEGER NOT NULL,          -- 1 at its creation, +1 a write
	body       BLOB NOT NULL,             -- the task's JSON
	updated_at TEXT NOT NULL              -- RFC 3339, UTC
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS a2a_tasks_context ON a2a_tasks (context_id, id);
CREATE TABLE IF NOT EXISTS a2a_push (
	task_id TEXT NOT NULL,
	id      TEXT NOT NULL,
	body    BLOB NOT NULL, -- the config's JSON
	PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
`

// The errors of the task rows.
var (
	ErrNoTask     = errors.New("no such task")
	ErrTaskExists = errors.New("the task exists already")
	// ErrStaleTask refuses an update made from a version of the task that
	// is not its latest: another writer updated it meanwhile.
	ErrStaleTask = errors.New("the task was updated since the version this update was made from")
)

// Task is a task row.
type Task struct {
	ID, ContextID, State string
	Version              int64
	Body                 []byte
	Updated              time.Time
}

// InitTasks makes the tables of the A2A tasks, unless they are there.
func (db *DB) InitTasks() error {
	return wrapErr(db, db.tx(func() error { return db.script(taskSchema) }))
}

// CreateTask adds t at version 1 (t.Version is ignored) and returns the
// version; ErrTaskExists when a task has t's id.
func (db *DB) CreateTask(t Task) (int64, error) {
	err := db.tx(func() error {
		rows, err := db.query(`SELECT 1 FROM a2a_tasks WHERE id = ?`, t.ID)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			return ErrTaskExists
		}
		return db.exec(`INSERT INTO a2a_tasks (id, context_id, state, version, body, updated_at) VALUES (?, ?, ?, 1, ?, ?)`,
			t.ID, t.ContextID, t.State, t.Body, t.Updated.UTC().Format(time.RFC3339Nano))
	})
	if err != nil {
		return 0, wrapErr(db, err)
	}
	return 1, nil
}

// UpdateTask writes t over its row, made from version prev, and returns
// the new version: ErrNoTask when there is none, ErrStaleTask when the
// row's version is not prev.
func (db *DB) UpdateTask(t Task, prev int64) (int64, error) {
	next := int64(0)
	err := db.tx(func() error {
		rows, err := db.query(`SELECT version FROM a2a_tasks WHERE id = ?`, t.ID)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return ErrNoTask
		}
		if cur := rows[0][0].(int64); cur != prev {
			return ErrStaleTask
		}
		next = prev + 1
		return db.exec(`UPDATE a2a_tasks SET context_id = ?, state = ?, version = ?, body = ?, updated_at = ? WHERE id = ?`,
			t.ContextID, t.State, next, t.Body, t.Updated.UTC().Format(time.RFC3339Nano), t.ID)
	})
	if err != nil {
		return 0, wrapErr(db, err)
	}
	return next, nil
}

func taskOf(r []any) Task {
	t := Task{ID: str(r[0]), ContextID: str(r[1]), State: str(r[2]), Version: r[3].(int64)}
	switch b := r[4].(type) {
	case []byte:
		t.Body = b
	case string:
		t.Body = []byte(b)
	}
	t.Updated, _ = time.Parse(time.RFC3339Nano, str(r[5]))
	return t
}

// TaskByID is the task id; ErrNoTask when there is none.
func (db *DB) TaskByID(id string) (Task, error) {
	rows, err := db.query(`SELECT id, context_id, state, version, body, updated_at FROM a2a_tasks WHERE id = ?`, id)
	if err != nil {
		return Task{}, wrapErr(db, err)
	}
	if len(rows) == 0 {
		return Task{}, wrapErr(db, ErrNoTask)
	}
	return taskOf(rows[0]), nil
}

// Tasks lists the tasks of contextID ("": any) whose state is state ("":
// any), by id, after the id after (""; from the first), limit at most; it
// returns the id to list the next page after ("" at the end) and how many
// tasks match in all.
func (db *DB) Tasks(contextID, state, after string, limit int) (list []Task, next string, total int, err error) {
	where := ` WHERE (? = '' OR context_id = ?) AND (? = '' OR state = ?)`
	args := []any{contextID, contextID, state, state}
	rows, err := db.query(`SELECT count(*) FROM a2a_tasks`+where, args...)
	if err != nil {
		return nil, "", 0, wrapErr(db, err)
	}
	total = int(rows[0][0].(int64))
	rows, err = db.query(`SELECT id, context_id, state, version, body, updated_at FROM a2a_tasks`+where+
		` AND id > ? ORDER BY id LIMIT `+strconv.Itoa(limit+1), append(args, after)...)
	if err != nil {
		return nil, "", 0, wrapErr(db, err)
	}
	for i, r := range rows {
		if i == limit {
			next = list[limit-1].ID
			break
		}
		list = append(list, taskOf(r))
	}
	return list, next, total, nil
}

// SavePush writes the push notification config id of task taskID (its
// JSON), over the one of that id if there is one.
func (db *DB) SavePush(taskID, id string, body []byte) error {
	return wrapErr(db, db.exec(`INSERT OR REPLACE INTO a2a_push (task_id, id, body) VALUES (?, ?, ?)`, taskID, id, body))
}

// Pushes are the push notification configs of task taskID, by id.
func (db *DB) Pushes(taskID string) (map[string][]byte, error) {
	rows, err := db.query(`SELECT id, body FROM a2a_push WHERE task_id = ? ORDER BY id`, taskID)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make(map[string][]byte, len(rows))
	for _, r := range rows {
		switch b := r[1].(type) {
		case []byte:
			out[str(r[0])] = b
		case string:
			out[str(r[0])] = []byte(b)
		}
	}
	return out, nil
}

// DeletePush removes the push notification config id of task taskID ("":
// every config of the task).
func (db *DB) DeletePush(taskID, id string) error {
	return wrapErr(db, db.exec(`DELETE FROM a2a_push WHERE task_id = ? AND (? = '' OR id = ?)`, taskID, id, id))
}
