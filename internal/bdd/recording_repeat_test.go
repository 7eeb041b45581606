package bdd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --record-missing with --repeat 3 keeps a recording per run: a model
// that said yes, no, yes is replayed as yes, no, yes (2/3 passed, no
// request), not as its first answer three times. A replay of more runs
// than were recorded names the run that has none; a single run replays
// run-1; a flat recording still serves every run.
func TestRecordMissingPerRepeat(t *testing.T) {
	t.Parallel()
	feature := strings.Replace(coinFeature(""), `    Given the ensemble "e.yaml"`, `    Given the ensemble "e.yaml"
    And the recording "rec"`, 1)
	dir := writeTempFiles(t, map[string]string{"e.yaml": coinEnsemble, "a.feature": feature})
	m := newCoinModel(t, 0.5, 1)
	m.pattern = []bool{true, false, true}
	live := liveOptions(m, true)
	live.RecordMissing = true
	o := runRepeats(t, RunOptions{Options: live, Paths: []string{dir}, Repeats: Repeats{Repeat: 3, PassRate: rate(0.5)}})
	if o.code != ExitPassed || m.requests.Load() != 6 || !strings.Contains(o.out, "2/3 passed") {
		t.Fatalf("recording: exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
	}
	for _, run := range []string{"run-1", "run-2", "run-3"} {
		if _, err := os.Stat(filepath.Join(dir, "rec", run, "answer.yaml")); err != nil {
			t.Fatalf("no recording of %s: %v", run, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "rec", "answer.yaml")); err == nil {
		t.Fatal("a recording beside the runs' folders")
	}

	// one at a time: with runs 1 and 3 (yes) done first, 2 of 3 at 50%
	// would be a verdict run 2 cannot change, and the replay stop early
	offline := liveOptions(m, false)
	o = runRepeats(t, RunOptions{Options: offline, Paths: []string{dir}, Repeats: Repeats{Repeat: 3, PassRate: rate(0.5), Concurrency: 1}})
	if o.code != ExitPassed || m.requests.Load() != 6 || !strings.Contains(o.out, "2/3 passed") {
		t.Fatalf("replaying 3 runs: exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
	}
	o = runRepeats(t, RunOptions{Options: offline, Paths: []string{dir}, Repeats: Repeats{Repeat: 4, PassRate: rate(0.75), Concurrency: 1}})
	if o.code != ExitFailed || m.requests.Load() != 6 || !strings.Contains(o.out, "2/4 passed") {
		t.Fatalf("replaying 4 runs: exit %d, %d requests:\n%s", o.code, m.requests.Load(), o.out)
	}
	sc := &Scenario{opts: &Options{}, dir: dir, repeat: 4, repeats: 4}
	if err := sc.givenRecording("rec"); err == nil || !strings.Contains(err.Error(), `the recording "rec" has one folder per run, and none for run 4 (run-4)`) {
		t.Fatalf("run 4 of a recording of 3: %v", err)
	}
	o = runRepeats(t, RunOptions{Options: offline, Paths: []string{dir}})
	if o.code != ExitPassed || m.requests.Load() != 6 {
		t.Fatalf("replaying one run (run-1 said yes): exit %d:\n%s", o.code, o.out)
	}
}
