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
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/batch"
	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// The Temporal engine on the command line (docs/temporal.md): `ensemble
// worker`, `run --temporal`, `answer` and `state show --temporal`. `make
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

// runTemporal is `ensemble run FILE --temporal`: the run is a workflow, its
// events come back as it goes, and its result and exit code are a local
// run's.
func runTemporal(ctx context.Context, io *stdio, e *ensemble.Ensemble, path, input string, f *runFlags) error {
	if f.stateFile != "" {
		return usageErr("--state and --temporal: a run on Temporal is durable already")
	}
	if err := f.recording.notOnTemporal(); err != nil {
		return err
	}
	// The workflow redacts nothing (its state must not depend on a
	// worker's keys): the input leaves here redacted, as a local run's is.
	in, err := temporalInput(e, path, io.secrets.String(input), &f.sharedFlags)
	if err != nil {
		return err
	}
	output := f.outputFormat(io)
	view, err := newRunView(io, e, output, f)
	if err != nil {
		return err
	}
	defer view.Close()
	c, err := f.temporal.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	id := f.runID
	if id == "" {
		id = fmt.Sprintf("%s-%d", e.Name, time.Now().UnixNano())
	}
	if output == "text" && !f.quiet {
		fmt.Fprintf(io.stderr(), "ensemble: run %s on %s (answer with: %s answer --temporal %s %s AGENT TEXT)\n", id, f.temporal.addr, io.program(), f.temporal.addr, id)
	}
	stop := view.Start()
	res, out, err := temporalengine.Run(ctx, c, f.temporal.queue, id, in, view.Sink())
	stop()
	if err != nil {
		return err
	}
	if output == "json" {
		if _, err := io.stdout().Write(out.Result); err != nil {
			return fmt.Errorf("writing the result: %w", err)
		}
	}
	if err := finishView(io, view, f, res, ""); err != nil {
		return err
	}
	if out.ExitCode != 0 {
		return &exitError{code: out.ExitCode}
	}
	return nil
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

// temporalBatch is `ensemble batch FILE --temporal`: each input is a run on
// Temporal (a workflow whose id is the batch's id and the input's
// position), --concurrency of them at a time; the lines, summary and exit
// code are a local batch's.
func temporalBatch(ctx context.Context, io *stdio, e *ensemble.Ensemble, path string, f *batchFlags, b *batch.Batch) error {
	if f.stateFile != "" {
		return usageErr("--state and --temporal: runs on Temporal are durable already")
	}
	base, err := temporalInput(e, path, "", &f.sharedFlags)
	if err != nil {
		return err
	}
	c, err := f.temporal.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	id := fmt.Sprintf("%s-batch-%d", e.Name, time.Now().UnixNano())
	if !f.quiet {
		fmt.Fprintf(io.stderr(), "ensemble: batch %s on %s\n", id, f.temporal.addr)
	}
	b.RunOne = batchOnTemporal(temporalengine.BatchRunOne(c, f.temporal.queue, id, base, io.secrets.String))
	out, closeOut, err := openOutput(io, f.out, false)
	if err != nil {
		return err
	}
	b.Out = out
	return finishBatch(ctx, io, b, nil, closeOut, "", f.quiet)
}

// temporalInput is the input of a run of the file at path with the shared
// flags' overrides (temporalengine.InputFor).
func temporalInput(e *ensemble.Ensemble, path, input string, s *sharedFlags) (temporalengine.RunInput, error) {
	if s.strict {
		return temporalengine.RunInput{}, usageErr("--strict: a run on Temporal does not end on warnings; run it without --temporal, or read its warnings in the result")
	}
	if s.budget() != nil {
		return temporalengine.RunInput{}, usageErr("--max-tokens, --max-requests and --max-cost: a run on Temporal has no budget (each execution is an activity, not capped mid-turn); run it without --temporal to cap it")
	}
	in, err := temporalengine.InputFor(e, temporalengine.RunInput{Path: path, Input: input, Responses: s.responses, Profiles: s.profiles,
		MaxTurns: s.maxTurns, Timeout: s.timeout, Parallel: s.parallel, Live: s.live, LiveAll: s.liveAll})
	if err != nil {
		return in, usageErr("%v", err)
	}
	return in, nil
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
