package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// BenchmarkStoreTurn measures what a save costs per turn in a ping-pong of
// turns turns (one record, its counts, output, edge and the turn count a
// turn): the ns/turn metric must not grow with the run (docs/performance.md).
// "sync" saves each turn on the run's goroutine, "behind" in the
// background (Writer.Background), waiting for the last turn to be written.
func BenchmarkStoreTurn(b *testing.B) {
	for _, turns := range []int{1000, 8000} {
		for _, behind := range []bool{false, true} {
			mode := "sync"
			if behind {
				mode = "behind"
			}
			b.Run(fmt.Sprintf("%d/%s", turns, mode), func(b *testing.B) {
				var total time.Duration
				n := 0
				for b.Loop() {
					b.StopTimer()
					db, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), true, "")
					if err != nil {
						b.Fatal(err)
					}
					st := state.New("go")
					f := &state.File{Ensemble: state.FileRef{Name: "bench", Path: "/bench.yaml", SHA256: fmt.Sprintf("%064x", 1)}, State: st}
					w, err := db.Create("bench", f, func(s string) string { return s })
					if err != nil {
						b.Fatal(err)
					}
					if behind {
						w.Background()
					}
					b.StartTimer()
					start := time.Now()
					for turn := 1; turn <= turns; turn++ {
						pingPongTurn(st, turn, map[string]any{"n": float64(turn)})
						if err := w.SaveTurn(st); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Wait(); err != nil {
						b.Fatal(err)
					}
					total += time.Since(start)
					n += turns
					b.StopTimer()
					w.Close()
					db.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/turn")
			})
		}
	}
}

// pingPongTurn plays turn of a loop of two agents, ping and pong, on st:
// the agent whose turn it is consumes the other's output and outputs out,
// as the engine's committer records it.
func pingPongTurn(st *state.State, turn int, out map[string]any) {
	agent, other := "ping", "pong"
	if turn%2 == 0 {
		agent, other = "pong", "ping"
	}
	st.Consume(agent, []string{other}, nil, nil)
	st.CountExecution(agent)
	st.SetOutput(agent, agent, out)
	st.AppendRecord(&state.Record{TurnNumber: turn, AgentName: agent, Execution: st.Executions(agent),
		OutputData: out, Timestamp: time.Now().UTC()})
	st.TurnCount = turn
}

// BenchmarkSQLiteTransaction is the least a turn's transaction costs with
// this SQLite: one prepared INSERT of a 700-byte row (a loop's turn) into a
// table keyed by an integer, committed on its own, in WAL mode with
// synchronous=NORMAL, as the store writes; "checkpoints" with SQLite's
// default folding of the WAL into the database every 1,000 pages (its
// fsyncs waited for), "no-checkpoint" without (docs/performance.md,
// "Durable runs"): there the WAL is folded back every 10,000 transactions
// with the timer stopped, so that it does not grow by 4 KiB a transaction
// for as long as the benchmark runs.
func BenchmarkSQLiteTransaction(b *testing.B) {
	for _, c := range []struct{ name, pragma string }{{"checkpoints", ""}, {"no-checkpoint", "&_pragma=wal_autocheckpoint(0)"}} {
		b.Run(c.name, func(b *testing.B) {
			db, insert := floorTable(b, c.pragma)
			ctx := context.Background()
			v := strings.Repeat("x", 700)
			key := int64(0)
			for b.Loop() {
				key++
				if _, err := insert.ExecContext(ctx, key, v); err != nil {
					b.Fatal(err)
				}
				if c.pragma != "" && key%10000 == 0 {
					b.StopTimer()
					if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
		})
	}
}

// BenchmarkSQLiteGroupedInsert is the least a row costs inside an open
// transaction that a group commit (store.DB.GroupCommit) commits every 512
// rows: one prepared INSERT of a row of the given size, keyed by an
// integer, in WAL mode with synchronous=NORMAL. It is the floor under what
// batch --state adds to a batch (docs/performance.md, "--state against the
// batch without it"): an input of the batch benchmark writes about 3.7 KB
// in 6 rows.
func BenchmarkSQLiteGroupedInsert(b *testing.B) {
	for _, size := range []int{100, 700, 3700} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			db, insert := floorTable(b, "")
			ctx := context.Background()
			exec := func(q string) {
				if _, err := db.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			v := strings.Repeat("x", size)
			key := int64(0)
			exec("BEGIN IMMEDIATE")
			for b.Loop() {
				key++
				if _, err := insert.ExecContext(ctx, key, v); err != nil {
					b.Fatal(err)
				}
				if key%512 == 0 {
					exec("COMMIT")
					exec("BEGIN IMMEDIATE")
				}
			}
			exec("COMMIT")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size)*1000, "ns/KB")
		})
	}
}

// floorTable opens a new SQLite database in WAL mode with
// synchronous=NORMAL, as the store does, with the dsn's pragma added, and
// a table t (key INTEGER PRIMARY KEY, v TEXT) with its prepared INSERT.
func floorTable(b *testing.B, pragma string) (*sql.DB, *sql.Stmt) {
	dsn := "file:" + filepath.Join(b.TempDir(), "floor.db") + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" + pragma
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (key INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		b.Fatal(err)
	}
	insert, err := db.PrepareContext(ctx, "INSERT INTO t (key, v) VALUES (?, ?)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { insert.Close() })
	return db, insert
}
