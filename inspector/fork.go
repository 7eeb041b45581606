package inspector

import (
	"github.com/ensemble-run/ensemble/durable"
	"github.com/ensemble-run/ensemble/store"
)

// forkRun makes the fork (durable.Fork).
func forkRun(path, id string, turn int, sync store.Sync) (string, error) {
	return durable.Fork(path, id, turn, sync)
}

// parentOf is the run info was forked from, and the turn.
func parentOf(info *store.RunInfo) (string, int) { return info.Parent, info.ParentTurn }
