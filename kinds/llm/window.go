package llm

import (
	"slices"

	"github.com/ensemble-run/ensemble/ensemble"
)

// Context-window strategies (docs/llm.md#messages-and-memory).
const (
	StrategyOldestFirst = "oldest_first"
	StrategyMiddleOut   = "middle_out"
	StrategyRecentTurns = "recent_turns"
)

// DefaultRecentTurns is how many turns recent_turns keeps when the window
// does not say.
const DefaultRecentTurns = 3

// unit is a run of messages that are kept or dropped together: one user
// message, one plain assistant message, or an assistant message with tool
// calls followed by all its results.
type unit struct {
	start, end int // messages[start:end]
	user       bool
}

func units(msgs []Message) []unit {
	us := make([]unit, 0, len(msgs))
	for i := 0; i < len(msgs); {
		m := &msgs[i]
		switch {
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			j := i + 1
			for j < len(msgs) && msgs[j].Role == RoleTool {
				j++
			}
			us = append(us, unit{start: i, end: j})
			i = j
		case m.Role == RoleTool && len(us) > 0:
			// A result without its call right before it (never written by
			// this runner): it stays with whatever precedes it.
			us[len(us)-1].end = i + 1
			i++
		default:
			us = append(us, unit{start: i, end: i + 1, user: m.Role == RoleUser})
			i++
		}
	}
	return us
}

// trimWindow returns the messages to send under the context window w
// (docs/llm.md#messages-and-memory). It trims only what is sent: msgs is never modified, and is
// returned as is when nothing has to go.
//
// Invariants:
//   - the system prompt is always sent (it is not in msgs; its tokens,
//     systemTokens, count against max_tokens);
//   - the newest user message is always sent, and so is the newest unit
//     (the latest reply, or tool calls with their results);
//   - an assistant message with tool calls and all its results are sent or
//     dropped together (see units);
//   - max_messages counts the messages besides the system prompt.
//
// Strategies: recent_turns first keeps only the last recent_turns turns (a
// turn starts at a user message); then, while a limit is exceeded,
// oldest_first and recent_turns drop the oldest units, middle_out the units
// nearest the middle of the conversation (keeping its start and its end).
// When the protected messages alone exceed a limit, they are sent anyway.
func trimWindow(msgs []Message, w *ensemble.ContextWindow, systemTokens int, tokens func(i int) int) []Message {
	if w == nil || len(msgs) == 0 {
		return msgs
	}
	strategy := w.Strategy
	if strategy == "" {
		strategy = StrategyOldestFirst
	}
	if w.MaxMessages <= 0 && w.MaxTokens <= 0 && strategy != StrategyRecentTurns {
		return msgs
	}
	us := units(msgs)
	keep := make([]bool, len(us))
	for i := range keep {
		keep[i] = true
	}
	protected := protectedUnits(us)
	if strategy == StrategyRecentTurns {
		n := w.RecentTurns
		if n <= 0 {
			n = DefaultRecentTurns
		}
		keepRecentTurns(us, keep, protected, n)
	}

	count, toks := 0, systemTokens
	for i, u := range us {
		if !keep[i] {
			continue
		}
		count += u.end - u.start
		if w.MaxTokens > 0 {
			for j := u.start; j < u.end; j++ {
				toks += tokens(j)
			}
		}
	}
	over := func() bool {
		return (w.MaxMessages > 0 && count > w.MaxMessages) || (w.MaxTokens > 0 && toks > w.MaxTokens)
	}
	if over() {
		for _, i := range dropOrder(us, keep, protected, strategy) {
			if !over() {
				break
			}
			keep[i] = false
			count -= us[i].end - us[i].start
			if w.MaxTokens > 0 {
				for j := us[i].start; j < us[i].end; j++ {
					toks -= tokens(j)
				}
			}
		}
	}
	if !slices.Contains(keep, false) {
		return msgs
	}
	out := make([]Message, 0, count)
	for i, u := range us {
		if keep[i] {
			out = append(out, msgs[u.start:u.end]...)
		}
	}
	return out
}

// protectedUnits marks the units a window never drops: the last, and the
// newest user message.
func protectedUnits(us []unit) []bool {
	protected := make([]bool, len(us))
	protected[len(us)-1] = true
	for i := len(us) - 1; i >= 0; i-- {
		if us[i].user { // the newest user message
			protected[i] = true
			break
		}
	}
	return protected
}

// keepRecentTurns drops the units before the last n user messages, but
// the protected ones.
func keepRecentTurns(us []unit, keep, protected []bool, n int) {
	seen := 0
	for i := len(us) - 1; i >= 0; i-- {
		if seen >= n && !protected[i] {
			keep[i] = false
			continue
		}
		if us[i].user {
			seen++
		}
	}
}

// dropOrder is the order in which a window over its limits drops the units
// still kept: oldest first, or from the middle out.
func dropOrder(us []unit, keep, protected []bool, strategy string) []int {
	order := make([]int, 0, len(us))
	for i := range us {
		if keep[i] && !protected[i] {
			order = append(order, i)
		}
	}
	if strategy == StrategyMiddleOut {
		mid := float64(len(us)-1) / 2
		dist := func(i int) float64 {
			d := float64(i) - mid
			if d < 0 {
				return -d
			}
			return d
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch da, db := dist(a), dist(b); {
			case da < db:
				return -1
			case da > db:
				return 1
			}
			return 0
		})
	}
	return order
}
