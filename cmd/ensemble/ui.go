package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/internal/inspector"
)

// uiFlags are the flags of `ensemble ui`.
type uiFlags struct {
	port   int
	listen string
	open   bool
}

func newUICmd(io *stdio) *cobra.Command {
	var f uiFlags
	cmd := &cobra.Command{
		Use:   "ui DB...",
		Short: "Inspect saved runs in the browser",
		Long: `Serve a web page that shows the runs of the state databases given (what
run --state DB writes): the runs, each run's graph, turns and executions,
updated live while a run is written; answer a run that waits for a person, and
run a run again from any of its turns (a fork). See docs/ui.md.

It listens on 127.0.0.1 (a free port unless --port) and prints the page's URL,
which holds a token: every request of the page needs it. --open starts the
browser on a one-time code instead, which the page exchanges for a cookie: the
token is never on a command line. Only the databases
given are served. --listen ADDR listens on another interface (with a warning:
anyone who can reach it and has the URL can answer and fork runs). It runs until
Ctrl-C; runs it resumed in the background are then interrupted, and resume goes
on with them.`,
		Args: io.args(1, -1, "one or more state databases DB (what run --state DB writes)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveUI(cmd.Context(), io, args, &f)
		},
	}
	cmd.Flags().IntVar(&f.port, "port", 0, "listen on `PORT` (default: a free port)")
	cmd.Flags().StringVar(&f.listen, "listen", "", "listen on `ADDR`, a host or host:port, rather than 127.0.0.1 (other machines may reach it)")
	cmd.Flags().BoolVar(&f.open, "open", false, "open the page in the browser")
	return cmd
}

// serveUI serves the inspector of the databases dbs until ctx is done.
func serveUI(ctx context.Context, io *stdio, dbs []string, f *uiFlags) error {
	if f.port < 0 || f.port > 65535 {
		return usageErr("--port must be from 0 to 65535, got %d", f.port)
	}
	host, port := "127.0.0.1", strconv.Itoa(f.port)
	if f.listen != "" {
		h, p, err := net.SplitHostPort(f.listen)
		switch {
		case err != nil:
			host = f.listen
		case p != "" && f.port != 0:
			return usageErr("--listen %s names a port: give it there or with --port, not both", f.listen)
		default:
			host, port = h, p
		}
	}
	addr := net.JoinHostPort(host, port)
	srv, err := inspector.New(inspector.Options{DBs: dbs, Listen: addr, LookupEnv: io.lookupEnv, Stderr: io.stderr()})
	if err != nil {
		return &exitError{code: engine.ExitUsage, err: err}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Close()
		return usageErr("--listen: %v", err)
	}
	if ip := net.ParseIP(host); f.listen != "" && (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		fmt.Fprintf(io.stderr(), "ensemble: warning: listening on %s, not only this machine's loopback: whoever reaches it with the URL can read, answer and fork these runs\n", l.Addr())
	}
	url := srv.URL(l.Addr().String())
	fmt.Fprintf(io.stdout(), "ensemble ui: serving %d state database(s) at\n  %s\nCtrl-C stops it.\n", len(dbs), url)
	if f.open {
		// The browser is started on a one-time code, not the token: a
		// command line is readable by every local user.
		if err := openBrowser(io, srv.OpenURL(l.Addr().String())); err != nil {
			fmt.Fprintf(io.stderr(), "ensemble: warning: cannot open a browser (%v): open the URL above\n", err)
		}
	}
	if err := srv.Serve(ctx, l); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// openBrowser starts the system's browser on url, without waiting for it.
func openBrowser(io *stdio, url string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name = "explorer"
	}
	if io.opener != nil {
		return io.opener(name, url)
	}
	c := exec.Command(name, url)
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait()
	return nil
}
