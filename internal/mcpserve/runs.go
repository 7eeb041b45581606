package mcpserve

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/events"
	"github.com/ensemble-run/ensemble/serve"
)

// Runs is the Executor over serve's run machinery: every call is a run
// of its state database, durable, that may wait for an answer.
type Runs struct{ runs *serve.Runs }

var _ Keeper = (*Runs)(nil)

// NewRunsServer is the MCP server of the ensembles runs serves, whose
// calls are runs of runs (durable; an ask agent waits). stateful: the
// transport keeps a session (stdio) rather than a request each
// (Streamable HTTP, stateless).
func NewRunsServer(runs *serve.Runs, stateful bool) *mcp.Server {
	var list []*ensemble.Ensemble
	for _, info := range runs.Ensembles() {
		if e := runs.Ensemble(info.Name); e != nil {
			list = append(list, e)
		}
	}
	return newServer(list, &Runs{runs: runs}, stateful)
}

// Handler is the Streamable HTTP handler (stateless) of the ensembles
// runs serves, for ensemble serve to mount at /mcp (serve.Server.Handle).
// A call's request that ends before its reply (the client cancelled it,
// or left) cancels its run.
func Handler(runs *serve.Runs) http.Handler {
	server := NewRunsServer(runs, false)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
}

// Run starts a run of e and follows it.
func (x *Runs) Run(ctx context.Context, e *ensemble.Ensemble, input string, progress func(int)) (*Outcome, error) {
	id, _, err := x.runs.Start(ctx, e.Name, &input, serve.StartOptions{})
	if err != nil {
		return nil, err
	}
	return x.follow(ctx, id, 0, progress)
}

// Answer answers agent of run id and follows the run from there.
func (x *Runs) Answer(ctx context.Context, id, agent, answer string, progress func(int)) (*Outcome, error) {
	evs, first, _, _, err := x.runs.Events(id, 0)
	if err != nil {
		return nil, err
	}
	after := 0
	if len(evs) > 0 {
		after = first + len(evs) - 1
	}
	if err := x.runs.Answer(id, map[string]string{agent: answer}, 0); err != nil {
		return nil, err
	}
	return x.follow(ctx, id, after, progress)
}

// follow waits until run id ends or waits for an answer, telling progress
// of each turn completed after event number after. A call cancelled (the
// client cancelled the request, or left) cancels the run; one cut short
// because the server stops (ErrStopped) leaves it to Runs.Close.
func (x *Runs) follow(ctx context.Context, id string, after int, progress func(int)) (*Outcome, error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		evs, first, live, more, err := x.runs.Events(id, after)
		if err != nil {
			return nil, err
		}
		for i, ev := range evs {
			if turn := events.CompletedTurn(ev); turn > 0 {
				progress(turn)
			}
			after = first + i
		}
		if !live {
			status, err := x.runs.Wait(ctx, id, 0)
			if err != nil {
				return nil, err
			}
			if status != serve.StatusQueued && status != serve.StatusRunning {
				return x.Status(id)
			}
		}
		select {
		case <-more:
		case <-tick.C: // a run that ends without a new event
		case <-ctx.Done():
			if !errors.Is(context.Cause(ctx), ErrStopped) {
				_ = x.runs.Cancel(id)
			} // else the server stops: Runs.Close interrupts the run, saved to go on
			return x.Status(id)
		}
	}
}

// Status is run id as its last saved turn has it.
func (x *Runs) Status(id string) (*Outcome, error) {
	res, status, err := x.runs.RunResult(id)
	if err != nil {
		return nil, err
	}
	res.SetOutput(x.runs.Ensemble(res.Ensemble))
	return &Outcome{RunID: id, Status: status, Result: res, Redact: x.runs.Redact}, nil
}

// ResultJSON is run id's result JSON.
func (x *Runs) ResultJSON(id string) ([]byte, error) {
	b, _, err := x.runs.Result(id)
	return b, err
}

// Recent are the last limit runs of the database, oldest first.
func (x *Runs) Recent(limit int) ([]serve.RunSummary, error) {
	list, _, err := x.runs.List("", "", "", math.MaxInt32)
	if err != nil {
		return nil, err
	}
	return list[max(0, len(list)-limit):], nil
}

// Redact is s with the keys of every served ensemble's profiles redacted.
func (x *Runs) Redact(s string) string { return x.runs.Redact(s) }
