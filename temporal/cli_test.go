package temporal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/engine"
	"github.com/ensemble-run/ensemble/temporalengine"
)

// TestCLI drives the real binary: `ensemble worker` against the in-process
// server, `run --temporal` printing the result a local run prints, and a
// run that waits for `ensemble answer`, seen by `state show --temporal`.
func TestCLI(t *testing.T) {
	ts, _, queue := server(t)
	bin := ensembleBinary(t)
	addr := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace(), "--task-queue", queue}
	w := exec.Command(bin, append([]string{"worker"}, addr...)...)
	w.Stderr = os.Stderr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		_ = w.Wait()
	})
	ensemble := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("ensemble %s: %v", strings.Join(args, " "), err)
		}
		if errb.Len() > 0 {
			t.Logf("ensemble %s: stderr: %s", args[0], errb.String())
		}
		return out.String(), cmd.ProcessState.ExitCode()
	}
	for _, name := range []string{"hello-scripts", "runaway-loop"} {
		in := example(t, name)
		local, lcode := ensemble("run", in.Path, "--responses", in.Responses, "--output", "json")
		remote, rcode := ensemble(append([]string{"run", in.Path, "--responses", in.Responses, "--output", "json"}, addr...)...)
		if lcode != rcode {
			t.Errorf("%s: exit code %d locally, %d on Temporal", name, lcode, rcode)
		}
		sameResult(t, &temporalengine.RunOutput{Result: []byte(local)}, &temporalengine.RunOutput{Result: []byte(remote)})
	}

	// The events, as --output jsonl prints them: the same ones, the last
	// (run_completed) with the same result.
	{
		in := example(t, "writer-reviewer")
		local, _ := ensemble("run", in.Path, "--responses", in.Responses, "--output", "jsonl")
		remote, _ := ensemble(append([]string{"run", in.Path, "--responses", in.Responses, "--output", "jsonl"}, addr...)...)
		kinds := func(out string) ([]string, any) {
			var ks []string
			var last any
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var ev map[string]any
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("jsonl: %v: %s", err, line)
				}
				ks = append(ks, fmt.Sprint(ev["type"], ":", ev["agent"]))
				last = strip(ev["result"])
			}
			slices.Sort(ks)
			return ks, last
		}
		lk, lr := kinds(local)
		rk, rr := kinds(remote)
		if !reflect.DeepEqual(lk, rk) || !reflect.DeepEqual(lr, rr) {
			t.Errorf("jsonl events differ\nlocal:\n%s\ntemporal:\n%s", local, remote)
		}
	}

	// A batch: the same lines as a local batch, in input order.
	three, _ := filepath.Abs(filepath.Join("testdata", "three.yaml"))
	resp, _ := filepath.Abs(filepath.Join("testdata", "three.responses.yaml"))
	inputs := filepath.Join(t.TempDir(), "inputs.jsonl")
	if err := os.WriteFile(inputs, []byte("\"a\"\n{\"id\": \"b\", \"input\": \"b\"}\n\"c\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	localLines, lcode := ensemble("batch", three, "--inputs", inputs, "--responses", resp, "-q")
	remoteLines, rcode := ensemble(append([]string{"batch", three, "--inputs", inputs, "--responses", resp, "-q"}, addr...)...)
	if lcode != 0 || rcode != 0 {
		t.Errorf("batch: exit code %d locally, %d on Temporal", lcode, rcode)
	}
	ll, rl := strings.Split(strings.TrimSpace(localLines), "\n"), strings.Split(strings.TrimSpace(remoteLines), "\n")
	if len(ll) != 3 || len(rl) != 3 {
		t.Fatalf("batch: %d lines locally, %d on Temporal, want 3:\n%s\n%s", len(ll), len(rl), localLines, remoteLines)
	}
	for i := range ll {
		if !reflect.DeepEqual(comparable(t, []byte(ll[i])), comparable(t, []byte(rl[i]))) {
			t.Errorf("batch line %d differs:\nlocal:    %s\ntemporal: %s", i+1, ll[i], rl[i])
		}
	}

	// A run that waits for an answer.
	in := example(t, "approval")
	done := make(chan int, 1)
	var res string
	go func() {
		out, code := ensemble(append([]string{"run", in.Path, "--run-id", "cli-approval", "--output", "json"}, addr...)...)
		res = out
		done <- code
	}()
	deadline := time.Now().Add(waitFor)
	for {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before it waited for its answer:\n%s", code, res)
		default:
		}
		out, _ := ensemble(append([]string{"state", "show", "cli-approval", "--output", "json"}, addr...)...)
		var r engine.Result
		if json.Unmarshal([]byte(out), &r) == nil && r.CompletionReason == engine.AwaitingInput {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never waited for its answer; state show says:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A mistyped agent, or one that is no ask agent, is refused (exit 2)
	// and leaves the run waiting.
	for _, name := range []string{"aprover", "publisher"} {
		if out, code := ensemble(append([]string{"answer", "cli-approval", name, "yes"}, addr...)...); code != 2 {
			t.Fatalf("answer for %q: exit %d, want 2\n%s", name, code, out)
		}
	}
	if _, code := ensemble(append([]string{"answer", "cli-approval", "approver", `{"approved": true}`}, addr...)...); code != 0 {
		t.Fatalf("answer: exit %d", code)
	}
	if code := <-done; code != 0 {
		t.Errorf("the answered run: exit %d\n%s", code, res)
	}
	// The run has ended: a late answer is refused.
	if out, code := ensemble(append([]string{"answer", "cli-approval", "approver", "yes"}, addr...)...); code != 2 {
		t.Errorf("an answer after the end: exit %d, want 2\n%s", code, out)
	}
	var r engine.Result
	if err := json.Unmarshal([]byte(res), &r); err != nil || r.CompletionReason != engine.Completed || r.AgentExecutionCount["publisher"] != 1 {
		t.Errorf("the answered run did not complete with the publisher:\n%s", res)
	}
}
