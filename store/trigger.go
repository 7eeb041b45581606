package store

import (
	"time"
)

// A trigger (an ensemble file's triggers:, run by `ensemble serve`) keeps
// two things in the database, so that every server process on it agrees:
// a row per fire of a cron schedule, claimed by the one process that
// starts its run (the primary key makes a second claim fail), and the time
// each trigger was first watched, from which a fire missed while no server
// ran is counted.
//
// The tables are made the first time a trigger is watched, so databases
// without triggers are as they were.
const triggerSchema = `
CREATE TABLE IF NOT EXISTS trigger_fires (
	ensemble   TEXT NOT NULL,
	trigger    TEXT NOT NULL, -- the trigger's key in its file
	fire_time  TEXT NOT NULL, -- RFC 3339, UTC, to the second
	run_id     TEXT NOT NULL, -- the run the fire starts
	claimed_at TEXT NOT NULL,
	PRIMARY KEY (ensemble, trigger, fire_time)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trigger_watch (
	ensemble TEXT NOT NULL,
	trigger  TEXT NOT NULL,
	since    TEXT NOT NULL, -- when a server first watched it
	PRIMARY KEY (ensemble, trigger)
) WITHOUT ROWID;
`

// Fire is a claimed fire of a trigger.
type Fire struct {
	Time    time.Time
	RunID   string
	Claimed time.Time
}

func fireTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// WatchTrigger records that a server watches the trigger from now on,
// unless one did before, and returns since when it is watched and its
// latest claimed fire (nil when none).
func (db *DB) WatchTrigger(ensemble, trigger string, now time.Time) (since time.Time, last *Fire, err error) {
	err = db.tx(func() error {
		if err := db.script(triggerSchema); err != nil {
			return err
		}
		if err := db.exec(`INSERT OR IGNORE INTO trigger_watch (ensemble, trigger, since) VALUES (?, ?, ?)`, ensemble, trigger, fireTime(now)); err != nil {
			return err
		}
		rows, err := db.query(`SELECT since FROM trigger_watch WHERE ensemble = ? AND trigger = ?`, ensemble, trigger)
		if err != nil {
			return err
		}
		since, _ = time.Parse(time.RFC3339, str(rows[0][0]))
		rows, err = db.query(`SELECT fire_time, run_id, claimed_at FROM trigger_fires WHERE ensemble = ? AND trigger = ? ORDER BY fire_time DESC LIMIT 1`, ensemble, trigger)
		if err != nil {
			return err
		}
		if len(rows) > 0 {
			last = &Fire{RunID: str(rows[0][1])}
			last.Time, _ = time.Parse(time.RFC3339, str(rows[0][0]))
			last.Claimed, _ = time.Parse(time.RFC3339, str(rows[0][2]))
		}
		return nil
	})
	return since, last, wrapErr(db, err)
}

// ClaimFire claims the fire of the trigger at fire for the run runID, in a
// transaction of its own: true for the one caller that claims it, false
// for every other (in this process or another), whichever comes first.
// Call WatchTrigger first: it makes the tables.
func (db *DB) ClaimFire(ensemble, trigger string, fire time.Time, runID string, now time.Time) (bool, error) {
	claimed := false
	err := db.tx(func() error {
		rows, err := db.query(`SELECT 1 FROM trigger_fires WHERE ensemble = ? AND trigger = ? AND fire_time = ?`, ensemble, trigger, fireTime(fire))
		if err != nil || len(rows) > 0 {
			return err
		}
		claimed = true
		return db.exec(`INSERT INTO trigger_fires (ensemble, trigger, fire_time, run_id, claimed_at) VALUES (?, ?, ?, ?, ?)`,
			ensemble, trigger, fireTime(fire), runID, fireTime(now))
	})
	if err != nil {
		return false, wrapErr(db, err)
	}
	return claimed, nil
}

// Fires lists the claimed fires of a trigger, oldest first (none before
// it is watched).
func (db *DB) Fires(ensemble, trigger string) ([]Fire, error) {
	rows, err := db.query(`SELECT count(*) FROM sqlite_schema WHERE name = 'trigger_fires'`)
	if err != nil || rows[0][0].(int64) == 0 {
		return nil, wrapErr(db, err)
	}
	rows, err = db.query(`SELECT fire_time, run_id, claimed_at FROM trigger_fires WHERE ensemble = ? AND trigger = ? ORDER BY fire_time`, ensemble, trigger)
	if err != nil {
		return nil, wrapErr(db, err)
	}
	out := make([]Fire, 0, len(rows))
	for _, r := range rows {
		f := Fire{RunID: str(r[1])}
		f.Time, _ = time.Parse(time.RFC3339, str(r[0]))
		f.Claimed, _ = time.Parse(time.RFC3339, str(r[2]))
		out = append(out, f)
	}
	return out, nil
}
