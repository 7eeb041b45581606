package inspector

import (
	"errors"
	"net/http"

	"github.com/ensemble-run/ensemble/store"
)

// forkRun is durable.Fork, once it is there.
func forkRun(path, id string, turn int, sync store.Sync) (string, error) {
	return "", &httpError{http.StatusNotImplemented, errors.New("forks are not there yet").Error()}
}

// parentOf is the run info was forked from, and the turn.
func parentOf(info *store.RunInfo) (string, int) { return "", 0 }
