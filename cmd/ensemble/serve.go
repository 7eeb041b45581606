package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/a2aserve"
	"github.com/ensemble-run/ensemble/internal/mcpserve"
	"github.com/ensemble-run/ensemble/internal/readcap"
	"github.com/ensemble-run/ensemble/serve"
)

// serveFlags are the flags of `ensemble serve`.
type serveFlags struct {
	listen     string
	state      string
	tokenFile  string
	cors       string
	hosts      []string
	maxRuns    int
	maxQueue   int
	maxConns   int
	maxBody    string
	grace      time.Duration
	keepEvents time.Duration
	profiles   []string
	responses  bool
	noUI       bool
	temporal   temporalFlags
	publicURL  string
}

func newServeCmd(io *stdio) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve PATH...",
		Short: "Serve ensembles as a durable HTTP service with a run API",
		Long: `Serve the ensembles of the files and folders given (each ensemble file of a
folder and its subfolders) over HTTP: start runs, follow their events, answer
the ones that wait for a person, cancel and fork them (docs/serve.md). Every
run is saved in one state database (--state): a server killed mid-run goes on
with each unfinished run from its last saved turn when it starts again on the
same database, and a run that waits for an answer waits across restarts.

It listens on 127.0.0.1:7777 unless --listen, and prints its URL and the token
every request must carry (Authorization: Bearer TOKEN): a random one, unless
--token-file or $ENSEMBLE_SERVE_TOKEN gives it. An address other than the
loopback needs a token given that way. The inspector (ensemble ui) is at /ui/
on the same port, over the same database and token. MCP clients call the
ensembles as tools at /mcp (Streamable HTTP), each call a run of the database.

With --temporal HOST:PORT every run is a workflow of that Temporal cluster,
played by its workers (the worker command), and saved here turn by turn as it
goes: the same API and results; a fork is refused there.

Ctrl-C or SIGTERM stops accepting requests, lets the runs going on end for
--grace at most, and exits; runs still going on then are saved as they stand
and go on at the next start.`,
		Args: io.args(1, -1, "one or more ensemble files or folders of ensembles"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), io, args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7777", "listen on `HOST:PORT` (a non-loopback host needs a token)")
	fl.StringVar(&f.state, "state", "ensemble-serve.db", "the state database every run is saved in, `FILE`")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the token requests must carry from `FILE` (default: $ENSEMBLE_SERVE_TOKEN, else a random one)")
	fl.StringVar(&f.cors, "cors", "", "let the web page of `ORIGIN` call the API from a browser (default: none)")
	fl.StringArrayVar(&f.hosts, "allow-host", nil, "accept requests whose Host header is `NAME`, the name clients reach it by (repeatable; IP addresses and localhost always are)")
	fl.IntVar(&f.maxRuns, "max-runs", 8, "run at most `N` runs at once; the rest wait in a queue")
	fl.IntVar(&f.maxQueue, "max-queue", 1000, "let at most `N` runs wait for a slot; more are refused (429)")
	fl.IntVar(&f.maxConns, "max-conns", 1024, "serve at most `N` connections at once; more wait until one closes")
	fl.StringVar(&f.maxBody, "max-body", "1MiB", "the largest request body, a `SIZE` such as 512KiB")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "on shutdown, let the runs going on end for `DURATION` at most")
	fl.DurationVar(&f.keepEvents, "events-retention", 7*24*time.Hour, "keep the events of a run that ended for `DURATION` in the journal, then drop them")
	fl.StringArrayVar(&f.profiles, "profiles", nil, "model profiles `FILE` for every ensemble (repeatable)")
	fl.BoolVar(&f.responses, "responses", false, "run each ensemble with the responses.yaml next to it, when it has one")
	fl.BoolVar(&f.noUI, "no-ui", false, "do not serve the inspector at /ui/")
	fl.StringVar(&f.publicURL, "public-url", "", "the server's address as the answer links of notifications name it, a `URL` such as https://ensemble.example.com (default: the --listen address)")
	f.temporal.register(cmd, "run the runs on the Temporal cluster at `HOST:PORT`, whose workers play them (docs/serve.md#runs-on-temporal)", false)
	return cmd
}

// runServe serves until ctx is done.
func runServe(ctx context.Context, io *stdio, paths []string, f *serveFlags) error {
	if f.maxRuns < 1 {
		return usageErr("--max-runs must be 1 or more, got %d", f.maxRuns)
	}
	if f.maxQueue < 1 {
		return usageErr("--max-queue must be 1 or more, got %d", f.maxQueue)
	}
	if f.maxConns < 1 {
		return usageErr("--max-conns must be 1 or more, got %d", f.maxConns)
	}
	if f.grace <= 0 {
		return usageErr("--grace must be more than 0, got %s", f.grace)
	}
	if f.keepEvents <= 0 {
		return usageErr("--events-retention must be more than 0, got %s", f.keepEvents)
	}
	maxBody, err := readcap.ParseSize(f.maxBody)
	if err != nil {
		return usageErr("--max-body: %v", err)
	}
	token := ""
	if f.tokenFile != "" {
		b, err := readcap.ReadTextFile(f.tokenFile, 4<<10)
		if err != nil {
			return usageErr("--token-file: %v", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return usageErr("--token-file %s is empty", f.tokenFile)
		}
	} else if v, _ := io.lookupEnv(serve.TokenEnv); strings.TrimSpace(v) != "" {
		token = strings.TrimSpace(v)
	}
	if f.publicURL != "" {
		if u, err := url.Parse(f.publicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr("--public-url: give an http:// or https:// URL, got %q", f.publicURL)
		}
	}
	var eng serve.Engine
	if f.temporal.addr != "" {
		var stop func()
		if eng, stop, err = serveEngine(&f.temporal); err != nil {
			return err
		}
		defer stop()
	}
	srv, err := serve.New(serve.Options{Engine: eng,
		Paths: paths, Listen: f.listen, State: f.state, Token: token, CORS: f.cors, Hosts: f.hosts,
		MaxRuns: f.maxRuns, MaxQueue: f.maxQueue, MaxConns: f.maxConns, MaxBody: maxBody, Grace: f.grace, EventsRetention: f.keepEvents,
		Profiles: f.profiles, Responses: f.responses, NoUI: f.noUI, PublicURL: f.publicURL,
		LookupEnv: io.lookupEnv, Stderr: io.stderr(),
		Skipped: func(path string, why error) {
			var dup *serve.DuplicateError
			if errors.As(why, &dup) {
				fmt.Fprintf(io.stderr(), "ensemble: skipping %s: %v\n", path, why)
				return
			}
			fmt.Fprintf(io.stderr(), "ensemble: skipping %s:\n%v\n", path, why)
		},
	})
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	srv.Handle("/mcp", mcpserve.Handler(srv.Runs()))
	if err := a2aserve.Mount(srv); err != nil {
		srv.Runs().Close(0)
		return err
	}
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usageErr("--listen: %v", err)
	}
	url := serve.URL(l.Addr().String())
	fmt.Fprintf(io.stdout(), "ensemble serve: %s (state %s)\n", url, f.state)
	if eng != nil {
		fmt.Fprintf(io.stdout(), "runs on Temporal: %s, task queue %s (namespace %s)\n", f.temporal.addr, f.temporal.queue, f.temporal.namespace)
	}
	if token == "" {
		// A generated token is printed: it is the only way to learn it.
		fmt.Fprintf(io.stdout(), "token: %s\n", srv.Token())
	} else {
		fmt.Fprintln(io.stdout(), "token: the one given (--token-file or $"+serve.TokenEnv+")")
	}
	if !f.noUI && token == "" {
		fmt.Fprintf(io.stdout(), "inspector: %s/ui/?token=%s\n", url, srv.Token())
	} else if !f.noUI {
		fmt.Fprintf(io.stdout(), "inspector: %s/ui/?token=TOKEN\n", url)
	}
	fmt.Fprintf(io.stdout(), "a2a: %s/.well-known/agent-card.json\n", url)
	for _, t := range srv.Triggers() {
		fmt.Fprintf(io.stdout(), "trigger: %s\n", t)
	}
	fmt.Fprintln(io.stdout(), "Ctrl-C stops it.")
	if err := srv.Serve(ctx, l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
