package store

import "os"

// flushEvery is how many turns saved in a database go between two
// background flushes of its WAL (about 0.7 MB of it in a loop of instant
// turns, where a turn writes a page or two).
const flushEvery = 128

// flusher writes the WAL's new pages to the disk in the background while
// the run goes on, as RocksDB's wal_bytes_per_sync does, so that the fsync
// that SQLite makes of the WAL before each checkpoint (then of the
// database) finds little left to write: that fsync, in the transaction
// that crosses the checkpoint's threshold, is the turn's to wait for. It
// makes nothing less durable: SQLite still makes every fsync it makes
// without it, this only does some of their writing earlier, off the run's
// goroutine (so a power cut may keep more of the run, never less). A flush
// that fails (the WAL not there yet) is only a flush not done.
type flusher struct {
	path string
	kick chan struct{}
	done chan struct{}
	n    int // flushes made, read after stop
}

func newFlusher(path string) *flusher {
	fl := &flusher{path: path, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go fl.loop()
	return fl
}

func (fl *flusher) loop() {
	defer close(fl.done)
	for range fl.kick {
		// Opened each time, so that a WAL removed and made again is the
		// one flushed; an open and a close are nothing beside the fsync.
		f, err := os.Open(fl.path)
		if err != nil {
			continue
		}
		if fsync(f) == nil {
			fl.n++
		}
		f.Close()
	}
}

// poke asks for a flush unless one is pending already.
func (fl *flusher) poke() {
	select {
	case fl.kick <- struct{}{}:
	default:
	}
}

// stop waits for the flush under way, if any, and ends the flusher.
func (fl *flusher) stop() {
	close(fl.kick)
	<-fl.done
}

// committed counts a write transaction committed on db, which saved turns
// turns, and every flushEvery turns has the WAL flushed in the
// background. With synchronous=FULL every commit is flushed already.
func (db *DB) committed(turns int) {
	db.commits++
	before := db.turns / flushEvery
	db.turns += turns
	if db.sync == SyncFull || db.turns/flushEvery == before {
		return
	}
	if db.flush == nil {
		db.flush = newFlusher(db.file + "-wal")
	}
	db.flush.poke()
}
