//go:build !notemporal

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// The Temporal engine on the command line (docs/temporal.md): `ensemble
// worker`, `answer`, `state show --temporal` and `serve --temporal`. `run
// --temporal` and `batch --temporal` go through durable and batch, with
// which the engine registers itself because this file imports it. `make
// test` builds without it (-tags notemporal, temporal_off.go), to spare
// compiling the Temporal SDK; `make test-temporal` tests it.

func (t *temporalFlags) dial() (client.Client, error) {
	c, err := temporalengine.Dial(t.addr, t.namespace, t.blobs)
	if err != nil {
		return nil, &exitError{code: engine.ExitUsage, err: fmt.Errorf("--temporal %s: %w", t.addr, err)}
	}
	return c, nil
}

func newWorkerCmd(io *stdio) *cobra.Command {
	var t temporalFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run ensembles' workflows and agents for a Temporal cluster",
		Long: `Poll a Temporal task queue and run what it is given: the turn loops of the
runs started with run --temporal, and their agents' executions. Every worker
must see the ensemble files (and scripts, responses and profiles files) at the
paths the runs were started with, with the same contents. Stops on SIGINT or
SIGTERM, after its running executions are handed back.`,
		Args: io.noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := t.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Fprintf(io.stderr(), "ensemble: worker polling task queue %q of %s (namespace %s)\n", t.queue, t.addr, t.namespace)
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			return temporalengine.Serve(ctx, c, t.queue, &temporalengine.Env{LookupEnv: io.lookupEnv})
		},
	}
	t.register(cmd, "the frontend of the Temporal cluster to work for, `HOST:PORT`", true)
	return cmd
}

func newAnswerCmd(io *stdio) *cobra.Command {
	var t temporalFlags
	cmd := &cobra.Command{
		Use:   "answer RUN_ID AGENT TEXT",
		Short: "Answer the question of an ask agent a run on Temporal waits for",
		Long: `Send the answer of AGENT's next execution to the run RUN_ID on Temporal (a
signal): the run goes on at once. TEXT is read as any output is (JSON text is
JSON).`,
		Args: io.args(3, 3, "a RUN_ID, an AGENT and the answer TEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			if err := checkTemporalAnswer(cmd.Context(), io, c, args[0], args[1]); err != nil {
				return err
			}
			return temporalengine.SendAnswer(cmd.Context(), c, args[0], args[1], args[2])
		},
	}
	t.register(cmd, "the frontend of the Temporal cluster the run is on, `HOST:PORT`", true)
	return cmd
}

// checkTemporalAnswer refuses, as a usage error, an answer that no
// execution could take (temporalengine.CheckAnswer).
func checkTemporalAnswer(ctx context.Context, io *stdio, c client.Client, id, agentName string) error {
	err := temporalengine.CheckAnswer(ctx, c, id, agentName, func(path string, profiles []string) (*ensemble.Ensemble, error) {
		return loadEnsemble(io, path, profiles)
	})
	if errors.Is(err, temporalengine.ErrAnswer) {
		return usageErr("%s", strings.TrimPrefix(err.Error(), temporalengine.ErrAnswer.Error()+": "))
	}
	return err
}

// showTemporal is `ensemble state show --temporal ADDR RUN_ID`: the run's
// result as of its last committed turn, read by a query.
func showTemporal(ctx context.Context, io *stdio, t *temporalFlags, id, output string) error {
	c, err := t.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	sf, err := temporalengine.QueryState(ctx, c, id)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	res := durable.Result(sf, nil)
	if output == "text" {
		return printSummary(io, res, id, nil, "")
	}
	return res.WriteJSON(io.stdout())
}

// serveEngine is the engine of `ensemble serve --temporal`: its runs are
// workflows on the cluster t names (temporalengine.Remote); stop closes
// the client.
func serveEngine(t *temporalFlags) (serve.Engine, func(), error) {
	c, err := t.dial()
	if err != nil {
		return nil, nil, err
	}
	return &temporalengine.Remote{C: c, Queue: t.queue}, c.Close, nil
}
