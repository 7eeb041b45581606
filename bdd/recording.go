package bdd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
	s.recording = path
	return nil
}
