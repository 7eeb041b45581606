package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/store"
)

// killEnsemble is a ping-pong of 40 turns (a seed, 20 pings, 19 pongs) of
// scripts that take a little while, so that a kill lands anywhere: in a
// script, between turns, in the middle of a save.
var killEnsemble = pingPongEnsemble("kill-resume", 20, 19, 100)

// pingPongEnsemble is a seed, then ping and pong in turn, pings and pongs
// times at most, all played by step.sh.
func pingPongEnsemble(name string, pings, pongs, maxTurns int) string {
	return fmt.Sprintf(`name: %s
input: go
agents:
  - name: seed
    script: step.sh
  - name: ping
    script: step.sh
    dependencies:
      - seed
      - agent_name: pong
        requires_all: false
    conversation: {max_turns: %d}
  - name: pong
    script: step.sh
    dependencies: [ping]
    conversation: {max_turns: %d}
conversation_limits:
  max_total_turns: %d
`, name, pings, pongs, maxTurns)
}

// killStep's output depends only on what the engine gives it, so that an
// execution played again after a kill answers the same.
const killStep = `#!/bin/sh
read -r _ || true
sleep 0.03
printf '{"agent": "%s", "execution": %s, "turn": %s}\n' "$ENSEMBLE_AGENT" "$ENSEMBLE_EXECUTION" "$ENSEMBLE_TURN"
`

// A run killed with SIGKILL at up to 20 random moments, and resumed after
// each, ends with the result of an uninterrupted run: every kill leaves the state
// of a complete turn (or no run yet, when it came before the first save, or
// the finished run, when it came after the last),
// the turn count never goes back, and the state always loads.
func TestKilledAtRandomMomentsResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{"ensemble.yaml": killEnsemble, "step.sh": killStep} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	killAndResume(t, dir, nil, 20, 8, 5)
}

// So does a run of instant turns, which its database follows behind (the
// turns that injected responses answer are saved a few at a time): 2×5,000
// turns, killed at up to 10 random moments.
func TestKilledRunOfInstantTurnsResumes(t *testing.T) {
	t.Parallel()
	const loop = 5000
	dir := t.TempDir()
	ens := pingPongEnsemble("instant", loop, loop, 2*loop+1)
	var resp strings.Builder
	resp.WriteString("seed: [go]\nping:\n")
	for i := 1; i <= loop; i++ {
		fmt.Fprintf(&resp, "  - {n: %d}\n", i)
	}
	resp.WriteString("pong:\n")
	for i := 1; i <= loop; i++ {
		fmt.Fprintf(&resp, "  - {n: %d}\n", i)
	}
	for name, body := range map[string]string{"ensemble.yaml": ens, "responses.yaml": resp.String(), "step.sh": killStep} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	killAndResume(t, dir, []string{"--responses", filepath.Join(dir, "responses.yaml")}, 10, 2, 3)
}

// killSeedVar names the seed of the kill moments, to play a failure's
// moments again (they land where they land on the machine's speed).
const killSeedVar = "ENSEMBLE_TEST_KILL_SEED"

// killSeed is the seed of killSeedVar, or one from the clock; it is
// logged, and printed with a failure.
func killSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(killSeedVar); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", killSeedVar, v, err)
		}
	}
	t.Logf("kill moments from seed %d (%s=%d to draw them again)", seed, killSeedVar, seed)
	return seed
}

// killAndResume runs dir/ensemble.yaml with --state (and the run flags
// extra) once whole, then kills it up to kills times, each at a random
// moment of the first 1/part of the time the whole run took, resuming it
// after each, and checks that it ends as the whole run did. A kill lands
// mid-run when the database then holds the run, unfinished, with a turn
// saved: until at least minMidRun kills have, it runs the ensemble so
// again in a new database (at most 10 times), so that the test cannot pass
// having tested no resume.
func killAndResume(t *testing.T, dir string, extra []string, kills int, part int64, minMidRun int) {
	t.Helper()
	ens := filepath.Join(dir, "ensemble.yaml")
	cli := func(args ...string) *exec.Cmd {
		if args[0] == "run" {
			args = append(args, extra...)
		}
		cmd := cliCommand(t, []string{"ENSEMBLE_PROFILES="}, args...)
		cmd.Dir = dir
		return cmd
	}
	start := time.Now()
	out, err := cli("run", ens, "--state", filepath.Join(dir, "reference.db"), "--output", "json").Output()
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("reference run: exit %d", code)
	}
	want := comparableResult(t, out)
	whole := time.Since(start)

	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	midRun, allKills := 0, 0
	const rounds = 10 // a loaded machine's runs may end before most kills land
	var sp string
	most := whole / time.Duration(part)
	for round := 1; midRun < minMidRun; round++ {
		if round > rounds {
			t.Fatalf("%d kills in %d runs, of which %d landed mid-run, want %d (seed %d)", allKills, rounds, midRun, minMidRun, seed)
		}
		sp = filepath.Join(dir, fmt.Sprintf("killed-%d.db", round))
		killed, mid, turns := killRun(t, cli, ens, sp, rng, kills, &most, whole)
		allKills += killed
		midRun += mid
		args := []string{"resume", sp, "--output", "json"}
		if !hasRun(t, sp) {
			args = []string{"run", ens, "--state", sp, "--output", "json"}
		}
		out, err = cli(args...).Output()
		if code := exitCode(t, err); code != 0 {
			t.Fatalf("the last resume: exit %d (seed %d)", code, seed)
		}
		if got := comparableResult(t, out); got != want {
			t.Fatalf("after %d kills (the last at turn %d) the result differs from an uninterrupted run's (seed %d):\n%s\nwant\n%s", killed, turns, seed, got, want)
		}
		t.Logf("run %d: %d kills, %d of them mid-run, the last after turn %d", round, killed, mid, turns)
	}
	out, err = cli("state", "show", sp, "--output", "json").Output()
	if code := exitCode(t, err); code != 0 {
		t.Fatalf("state show: exit %d", code)
	}
	if got := comparableResult(t, out); got != want {
		t.Fatalf("state show prints\n%s\nwant\n%s", got, want)
	}
}

// hasRun reports whether the database sp holds the run yet.
func hasRun(t *testing.T, sp string) bool {
	t.Helper()
	if ok, _ := store.IsDatabase(sp); !ok {
		return false
	}
	db, err := store.Open(sp, false, "")
	if errors.Is(err, store.ErrNoSchema) {
		return false // killed before its first transaction: run --state starts it again
	}
	if err != nil {
		t.Fatalf("after a kill: %v", err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatalf("after a kill: %v", err)
	}
	if len(runs) > 1 {
		t.Fatalf("after a kill the database holds %d runs", len(runs))
	}
	return len(runs) == 1
}

// killRun runs ens with its state in the database sp, killing it up to
// kills times, each at a moment of rng within most, and resuming it after
// each; it stops when the run finishes. It returns the kills, those that
// landed mid-run (the database then holds the run, unfinished, with a
// turn saved), and the turn of the state after the last kill.
//
// The window adapts to the machine's speed, which changes under the test
// as other tests come and go: a kill that leaves no turn saved doubles it,
// up to whole (a process takes longer to start on a busy machine, or under
// the race detector, and kills drawn from a window fitted to a quiet one
// would all land before the first save); a run that finishes before its
// kill halves it (the reference run, timed on a busy machine, made it too
// wide for a quiet one, and the resumed runs have less left to do).
func killRun(t *testing.T, cli func(...string) *exec.Cmd, ens, sp string, rng *rand.Rand, kills int, window *time.Duration, whole time.Duration) (killed, midRun, turns int) {
	t.Helper()
	for killed < kills {
		args := []string{"run", ens, "--state", sp, "--output", "json"}
		if hasRun(t, sp) {
			args = []string{"resume", sp, "--output", "json"}
		}
		cmd := cli(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Anywhere from the start of the process to most after it.
		most := *window
		time.Sleep(time.Duration(rng.Int64N(int64(most) + 1)))
		err := cmd.Process.Signal(syscall.SIGKILL)
		werr := cmd.Wait()
		if errors.Is(err, os.ErrProcessDone) || cmd.ProcessState.Success() {
			*window = max(most/2, time.Millisecond)
			break // it finished before the kill
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("%v ended on its own before the kill: %v\n%s", args, werr, stderr.Bytes())
		}
		killed++
		if !hasRun(t, sp) {
			*window = min(2*most, max(whole, most))
			continue
		}
		sf := readState(t, sp)
		if sf.turn() < turns || (sf.CompletionReason != "" && sf.CompletionReason != "completed") {
			t.Fatalf("kill %d: the state holds turn %d (%q) after turn %d", killed, sf.turn(), sf.CompletionReason, turns)
		}
		turns = sf.turn()
		if sf.CompletionReason == "completed" {
			// The kill came after the final save, while the result was being
			// printed: the run is over, and resuming it prints its result.
			break
		}
		if turns > 0 {
			midRun++
		} else {
			*window = min(2*most, max(whole, most))
		}
	}
	return killed, midRun, turns
}
