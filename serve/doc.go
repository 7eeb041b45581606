// Package serve is `ensemble serve` (docs/serve.md): ensembles served as a
// durable HTTP service. It is a thin adapter over the one spine: every run
// is assembled by package session and kept in one state database by
// package durable, as `ensemble run --state` and `resume` keep theirs; this
// package adds no engine of its own.
//
// It has two layers:
//
//   - Runs (runs.go, journal.go, webhook.go), the run machinery, which
//     knows nothing of HTTP: Start a run of a served ensemble, Wait for it
//     to end or suspend, read its Result (the bytes `state show` prints;
//     RunResult, the same as a value, its text to show through Redact),
//     its Events (the events of `--output jsonl`, numbered from 1 and kept
//     across restarts), Answer it, Cancel it, Fork it; at most
//     Options.MaxRuns at once, the rest queued. A run that ends or
//     suspends posts to its webhook. Refusals are *Error values with a
//     Code, which each front door turns into its own error shape.
//   - Server (server.go, http.go): the run API under /v1/ over Runs, the
//     inspector (package inspector) at /ui/ over the same database and
//     token, and a guard in front of both: the token as Authorization:
//     Bearer, the Host header against DNS rebinding, CORS for one origin,
//     every body capped.
//   - Chat completions (chat.go): OpenAI's /v1/models and
//     /v1/chat/completions over Runs, behind the same guard; a run that
//     waits is answered by the next message of its conversation.
//   - Triggers (triggers.go): the served files' cron schedules, each
//     fire claimed by one row of the state database (store.ClaimFire) so
//     that one run starts per fire across restarts and processes, the
//     time read from Options.Clock; and their webhooks at /hooks/PATH,
//     which the guard lets through without the token: the HMAC of the
//     body (X-Hub-Signature-256) authenticates them.
//   - Notifications (notify.go): an ask agent's notify: is posted the
//     question of a run that waits, with a one-time answer link at
//     /answer/TOKEN, which the guard lets through too: the token is the
//     link's authentication.
//
// Another front door mounts beside the run API and reuses the machinery:
//
//	srv, err := serve.New(serve.Options{Paths: []string{"ensembles/"}})
//	runs := srv.Runs()
//	srv.Handle("/v1/chat/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
//		id, _, err := runs.Start(r.Context(), "writer", &text, serve.StartOptions{})
//		status, err := runs.Wait(r.Context(), id, time.Minute)
//		result, _, err := runs.Result(id)
//		// ... runs.Answer(id, map[string]string{"approver": "yes"}, 0)
//	}))
//	err = srv.Serve(ctx, listener)
//
// Handle puts the handler behind the same guard. The result of a run is
// the result object of `state show`; its output is the value of the
// file's output: agent (engine.Result.Output), or without one the whole
// final state.
//
// Options.Engine runs the runs on another engine than this process's: on
// Temporal (temporalengine.Remote, ensemble serve --temporal). The server
// then follows each run's workflow and saves its turns in the same state
// database (engine.go), so that everything above reads the same rows;
// Fork is refused there.
//
// # Durability
//
// A run is saved (its turn 0) before Start returns, then after every turn.
// Serve first goes on with every run of the database that has not finished
// (a server killed mid-run, or a run queued when it stopped), each from its
// last saved turn; a run waiting for an answer waits across restarts. What
// the database does not hold is kept beside it, in the folder STATE.serve/:
// the events of every run (events.log, a line per event, appended as it
// comes), a run's webhook, idempotency key and parent and whether a caller
// cancelled it (RUN.json, for a run that has any), and the run each
// Idempotency-Key made (idem/). New runs are saved through one shared
// connection to the database, as a batch's runs are. A turn cut
// short by a kill runs again at the restart, and its events then come
// again under new sequence numbers: a stream never loses an event, and
// Last-Event-ID resumes after any of them, across restarts too.
//
// Part of the public API (go doc github.com/ensemble-run/ensemble).
package serve
