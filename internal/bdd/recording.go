package bdd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// givenRecording replays the model exchanges, tool results and answers of
// a recording folder (ensemble run --record, docs/recording.md): the LLM
// agents without injected responses are served from it, offline, and a
// request it lacks fails the agent with the difference.
func (s *Scenario) givenRecording(dir string) error {
	path := s.Resolve(dir)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && s.opts != nil && s.opts.RecordMissing:
		if err := os.MkdirAll(path, 0o755); err != nil { // test --record-missing makes it
			return fmt.Errorf("the recording %s: %w", quote(dir), err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the recording %s does not exist (%s: a folder relative to the feature file; test --record-missing --live-all makes it)", quote(dir), path)
	case err != nil:
		return fmt.Errorf("the recording %s: %w", quote(dir), err)
	case !st.IsDir():
		return fmt.Errorf("the recording %s is not a folder", quote(dir))
	}
	path, err = s.repeatRecording(dir, path)
	if err != nil {
		return err
	}
	s.recording = path
	return nil
}

// repeatRecording is the folder of this run's recording. A recording made
// by test --record-missing with --repeat N keeps one folder per run,
// run-1 … run-N, so that a replay serves the N samples the model gave,
// not one sample N times: run n records to and replays from run-n. A
// recording without run-1 is one for every run (made by a single run, or
// by ensemble run --record).
func (s *Scenario) repeatRecording(dir, path string) (string, error) {
	n := max(s.repeat, 1)
	recording := s.opts != nil && s.opts.RecordMissing
	if st, err := os.Stat(filepath.Join(path, "run-1")); !(recording && s.repeats > 1) && (err != nil || !st.IsDir()) {
		return path, nil
	}
	sub := filepath.Join(path, "run-"+strconv.Itoa(n))
	st, err := os.Stat(sub)
	switch {
	case errors.Is(err, fs.ErrNotExist) && recording:
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return "", fmt.Errorf("the recording %s: %w", quote(dir), err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("the recording %s has one folder per run, and none for run %d (run-%d): it was recorded with fewer runs; test --record-missing --repeat %d adds the runs it lacks", quote(dir), n, n, n)
	case err != nil:
		return "", fmt.Errorf("the recording %s: %w", quote(dir), err)
	case !st.IsDir():
		return "", fmt.Errorf("the recording %s: run-%d is not a folder", quote(dir), n)
	}
	return sub, nil
}
