package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ensemble-run/ensemble/internal/inspector"
	"github.com/ensemble-run/ensemble/store"
)

// MinTokenLength is the length of the shortest token a server on another
// address than the loopback takes.
const MinTokenLength = 16

// TokenEnv names the variable that holds the token a server expects
// (ensemble serve reads it when --token-file is not given).
const TokenEnv = "ENSEMBLE_SERVE_TOKEN"

// Options configure a Server. The zero value of a limit is its default.
type Options struct {
	// Paths are ensemble files and folders of ensemble files (each file
	// of a folder and its subfolders that is an ensemble is served).
	Paths []string
	// Listen is "host:port"; the default is 127.0.0.1:7777. A host that
	// is not a loopback address needs a Token.
	Listen string
	// State is the state database every run is saved in (created when
	// missing); the default is ensemble-serve.db. The server keeps what
	// the database does not hold beside it, in STATE.serve/.
	State string
	// Token is what every request must carry (Authorization: Bearer);
	// "" makes a random one on a loopback address (Server.Token).
	Token string
	// CORS is the one origin allowed to call the API from a browser; ""
	// allows none.
	CORS string
	// Hosts are host names the Host header may name beside IP addresses,
	// localhost and Listen's host: the names clients reach the server by.
	Hosts []string
	// MaxRuns is how many runs go on at once (default 8); MaxQueue how
	// many may wait for a slot (default 1000) before a new one is refused
	// (429).
	MaxRuns, MaxQueue int
	// MaxConns caps the connections served at once (default 1024): past
	// it, new ones wait until one closes (connlimit.go).
	MaxConns int
	// MaxBody caps every request's body (default 1 MiB).
	MaxBody int64
	// MaxWait caps Prefer: wait (default 10 minutes).
	MaxWait time.Duration
	// ReadTimeout bounds the arrival of a request's headers and of its
	// body (default 1 minute); IdleTimeout the time a connection is kept
	// open between requests (default 2 minutes); WriteTimeout each write
	// of an answer (default 2 minutes): a client that stopped reading its
	// answer or its event stream is let go (slowclient.go).
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// Grace is how long a shutdown lets the runs going on end (default 30
	// seconds); those left are interrupted, saved, and go on when the
	// server starts again.
	Grace time.Duration
	// KeepAlive is the interval of an event stream's keep-alive comments
	// (default 15 seconds).
	KeepAlive time.Duration
	// WebhookAttempts bounds the deliveries of one webhook call (default
	// 5); WebhookBackoff is the wait after the first failure (default 1
	// second), doubled after each (30 seconds at most).
	WebhookAttempts int
	WebhookBackoff  time.Duration
	// Profiles are model profiles files for every ensemble; Responses
	// runs each ensemble that has a responses.yaml next to it with those
	// injected responses (as mcp serve --responses).
	Profiles  []string
	Responses bool
	// NoUI leaves the inspector out (it is mounted at /ui/ otherwise).
	NoUI bool
	// LookupEnv reads the environment (nil: os.LookupEnv): the keys an
	// ensemble's runs need, checked and redacted, are read once, when its
	// first run opens the session its runs share (a changed value is not
	// seen until the server starts again). Stderr gets what runs report
	// beyond their state (nil: discarded); Skipped is told of every
	// ensemble file of a folder not served, and why.
	LookupEnv func(string) (string, bool)
	// Environ is the environment the runs' scripts and MCP servers
	// inherit (nil: os.Environ), less every variable that holds a secret
	// of the server or of any file served (envsecrets.go).
	Environ func() []string
	Stderr  io.Writer
	Skipped func(path string, why error)
	// Clock is the time cron triggers read (nil: time.Now);
	// TriggerPoll is the longest the scheduler sleeps before reading it
	// again (default 30 seconds), so that a test's fake clock, or a
	// host's that jumped, is seen.
	Clock       func() time.Time
	TriggerPoll time.Duration
	// TimeoutPoll is how often the server looks for runs whose question
	// has timed out (an ask agent's timeout:, read on Clock; default 30
	// seconds); it looks when it starts too.
	TimeoutPoll time.Duration
	// PublicURL is the server's address as those who follow its answer
	// links reach it (notify: of ask agents): https://ensemble.example.com;
	// the default is Listen's.
	PublicURL string
	// Engine, when set, runs the runs on another engine (Temporal,
	// engine.go) instead of in this process; nil: the local engine.
	Engine Engine
	// EventsRetention is how long the events of a run that ended are
	// kept in the journal (default 7 days; negative: dropped at the first
	// compaction); EventsMaxSize the size of events.log past which it is
	// compacted while the server runs (default 64 MiB), besides at start
	// (compact.go).
	EventsRetention time.Duration
	EventsMaxSize   int64
}

func (o *Options) skipped(path string, why error) {
	if o.Skipped != nil {
		o.Skipped(path, why)
	}
}

func (o *Options) defaults() {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:7777"
	}
	if o.State == "" {
		o.State = "ensemble-serve.db"
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 8
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 1000
	}
	if o.EventsRetention == 0 {
		o.EventsRetention = defaultEventsRetention
	}
	if o.EventsMaxSize <= 0 {
		o.EventsMaxSize = defaultEventsMaxSize
	}
	if o.MaxConns <= 0 {
		o.MaxConns = defaultMaxConns
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 10 * time.Minute
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = defaultReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = defaultIdleTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = defaultWriteTimeout
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 15 * time.Second
	}
	if o.WebhookAttempts <= 0 {
		o.WebhookAttempts = 5
	}
	if o.WebhookBackoff <= 0 {
		o.WebhookBackoff = time.Second
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.TriggerPoll <= 0 {
		o.TriggerPoll = 30 * time.Second
	}
	if o.TimeoutPoll <= 0 {
		o.TimeoutPoll = 30 * time.Second
	}
}

// Server is `ensemble serve`: the run API over Runs, the inspector at
// /ui/, and what else is mounted (Handle), behind one guard.
type Server struct {
	o       Options
	token   string
	runs    *Runs
	ui      *inspector.Server
	mux     *http.ServeMux
	mounted []string
	public  *http.ServeMux // the routes without the token (mount.go)
	done    chan struct{}
	// hooks are the webhook triggers by path, crons the cron triggers
	// (triggers.go).
	hooks map[string]*hook
	crons []*cronJob
}

// IsLoopback reports whether listen's host ("host:port") is a loopback
// address or localhost.
func IsLoopback(listen string) bool {
	h, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// New loads the ensembles of o.Paths, opens (or creates) the state
// database and returns the server. It starts nothing: Serve does, and
// goes on with the runs the database holds unfinished.
func New(o Options) (*Server, error) {
	o.defaults()
	if !IsLoopback(o.Listen) && o.Token == "" {
		return nil, fmt.Errorf("--listen %s is not a loopback address: give a token (--token-file, or $%s)", o.Listen, TokenEnv)
	}
	if !IsLoopback(o.Listen) && len(o.Token) < MinTokenLength {
		// Nothing slows down guesses: a short token reached from the
		// network is found by trying them all.
		return nil, fmt.Errorf("--listen %s is not a loopback address: the token must have %d characters or more, got %d (openssl rand -hex 32 makes one)",
			o.Listen, MinTokenLength, len(o.Token))
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return nil, fmt.Errorf("--listen %q: give HOST:PORT", o.Listen)
	}
	list, err := findEnsembles(o.Paths, &o)
	if err != nil {
		return nil, err
	}
	if list, err = checkEngine(&o, list); err != nil { // engine.go
		return nil, err
	}
	// The state database exists before the inspector reads it.
	db, err := store.Open(o.State, true, store.SyncNormal)
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	db.Close()
	s := &Server{o: o, token: o.Token, mux: http.NewServeMux(), done: make(chan struct{})}
	if s.token == "" {
		var b [24]byte
		rand.Read(b[:])
		s.token = hex.EncodeToString(b[:])
	}
	if s.runs, err = newRuns(&s.o, list); err != nil {
		return nil, err
	}
	s.runs.hideSecrets(s.token) // envsecrets.go
	s.routes(s.mux)
	s.chatRoutes(s.mux)                           // chat.go
	s.mux.HandleFunc(answerPrefix, s.serveAnswer) // notify.go
	if err := s.setupTriggers(list); err != nil { // triggers.go
		s.runs.Close(0)
		return nil, err
	}
	if err := s.checkNotify(list); err != nil { // notify.go
		s.runs.Close(0)
		return nil, err
	}
	if !o.NoUI {
		// Answers and forks from the page go on in the run machinery, as
		// the API's do: their events are kept, their webhooks called.
		s.ui, err = inspector.New(inspector.Options{DBs: []string{o.State}, Listen: o.Listen, Token: s.token,
			LookupEnv: o.LookupEnv, Stderr: o.Stderr, GoOn: s.runs, Hosts: o.Hosts})
		if err != nil {
			return nil, err
		}
		h := s.ui.Handler()
		s.mux.Handle("/ui/", http.StripPrefix("/ui", h))
		s.mux.Handle("/api/", h)  // the page's requests
		s.mux.Handle("/auth/", h) // its one-time codes
		s.mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	}
	return s, nil
}

// Runs is the server's run machinery, for a handler mounted beside the
// run API (Handle).
func (s *Server) Runs() *Runs { return s.runs }

// Token is the token every request must carry.
func (s *Server) Token() string { return s.token }

// Handle mounts h at pattern (a path prefix ending in "/", or an exact
// path) beside the run API, behind the same guard: the token as
// Authorization: Bearer, the Host check, the body cap. Call it before
// Serve.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	_, path, _ := strings.Cut(pattern, " ")
	if path == "" {
		path = pattern
	}
	s.mounted = append(s.mounted, path)
}

// Handler is the server's handler: every route behind the guard.
func (s *Server) Handler() http.Handler { return s.guard(s.mux) }

// URL is the server's address for one listening at addr.
func URL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return (&url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}).String()
}

// Serve goes on with the unfinished runs of the state database, then
// serves on l until ctx is done: it then stops accepting requests and
// runs, lets the runs going on end for Options.Grace at most, interrupts
// those left (saved: they go on when the server starts again) and
// returns.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.o.PublicURL == "" { // the answer links' (notify.go)
		s.o.PublicURL = URL(l.Addr().String())
	}
	s.runs.recover()
	stopTriggers := s.startTriggers(ctx)
	stopTimeouts := s.startTimeouts(ctx) // asktimeout.go
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: min(10*time.Second, s.o.ReadTimeout), IdleTimeout: s.o.IdleTimeout,
		ErrorLog: log.New(logWriter{s.runs}, "ensemble serve: http: ", 0)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(limitConns(l, s.o.MaxConns)) }() // connlimit.go
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	close(s.done) // event streams end
	stopTriggers()
	stopTimeouts()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(sctx)
	cancel()
	s.runs.Close(s.o.Grace)
	if s.ui != nil {
		s.ui.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
