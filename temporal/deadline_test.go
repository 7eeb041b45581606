package temporal_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// An ask agent's timeout: holds in a workflow as in a local run: a
// question nobody answers by its deadline takes its on_timeout, an answer
// given in the file or a failed execution (ask_timeout), and the run goes
// on; input_timed_out is among its events.
func TestAskDeadlineInWorkflow(t *testing.T) {
	ts, c, queue := server(t)
	startWorker(ts, queue, &temporalengine.Env{})
	for _, tc := range []struct {
		name, onTimeout string
		check           func(res *engine.Result) error
	}{
		{"answer", "on_timeout: {answer: auto-approved}", func(res *engine.Result) error {
			if res.CompletionReason != engine.Completed || res.FinalState["approver"] != "auto-approved" || res.AgentExecutionCount["approver"] != 1 {
				return fmt.Errorf("%s, approver %v", res.CompletionReason, res.FinalState["approver"])
			}
			return nil
		}},
		{"fail", "on_timeout: fail", func(res *engine.Result) error {
			if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "ask_timeout") || res.ExitCode() == 0 {
				return fmt.Errorf("%s, errors %+v, exit %d", res.CompletionReason, res.Errors, res.ExitCode())
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ensemble.yaml")
			body := "name: deadline\nagents:\n  - name: approver\n    ask: Ship it?\n    timeout: 2s\n    " + tc.onTimeout + "\n"
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := temporalengine.NewInput(path, "")
			if err != nil {
				t.Fatal(err)
			}
			out := runTemporal(t, c, queue, in)
			var res engine.Result
			if err := json.Unmarshal(out.Result, &res); err != nil {
				t.Fatal(err)
			}
			if err := tc.check(&res); err != nil {
				t.Fatalf("after the deadline: %v\n%s", err, out.Result)
			}
			types := map[string]int{}
			for _, ev := range out.Events {
				types[string(ev.Type)]++
			}
			if types["input_requested"] != 1 || types["input_timed_out"] != 1 {
				t.Fatalf("events %v, want one input_requested and one input_timed_out", types)
			}
		})
	}
}
