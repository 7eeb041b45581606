package bdd

import (
	"context"
	"fmt"
	"os"

	"github.com/ensemble-run/ensemble/cassette"
)

// givenRecording replays the model exchanges, tool results and answers of
// a recording folder (ensemble run --record, docs/recording.md): the LLM
// agents without injected responses are served from it, offline, and a
// request it lacks fails the agent with the difference.
func (s *Scenario) givenRecording(dir string) error {
	path := s.Resolve(dir)
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return fmt.Errorf("the recording %s is not a folder", quote(dir))
	}
	s.recording = path
	return nil
}

// withRecording is ctx carrying the scenario's recording, when it has one.
func (s *Scenario) withRecording(ctx context.Context) (context.Context, error) {
	if s.recording == "" {
		return ctx, nil
	}
	c, err := cassette.Open(cassette.Options{Dir: s.recording, Mode: cassette.Replay})
	if err != nil {
		return ctx, err
	}
	return cassette.With(ctx, c), nil
}
