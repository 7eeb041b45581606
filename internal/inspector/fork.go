package inspector

import (
	"github.com/ensemble-run/ensemble/store"
)

// parentOf is the run info was forked from, and the turn.
func parentOf(info *store.RunInfo) (string, int) { return info.Parent, info.ParentTurn }
