package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ensemble-run/ensemble/agentpath"
	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// The API's view of one execution, a child ensemble's included, and the
// model requests it sent.

// Execution is one execution in full: its record (with its kind's
// details), and the memory its agent kept after it (an LLM agent's
// conversation: the model messages and tool calls). For an agent of a
// child ensemble (an agent path with a "/"), Path, Turn and Count say
// where it is: its path, the run's turn of the execution that ran the
// child, and how many records the path has in that execution (a loop's
// iterations).
type Execution struct {
	Record *state.Record    `json:"record"`
	Memory *json.RawMessage `json:"memory,omitempty"`
	Path   string           `json:"path,omitempty"`
	Turn   int              `json:"turn,omitempty"`
	Count  int              `json:"count,omitempty"`
	// Slim: the record is of a loop's earlier iteration, which a run keeps
	// without its input, output and stderr.
	Slim bool `json:"slim,omitempty"`
	// Parent is the execution of the run's agent that ran the child.
	Parent *ExecutionRef `json:"parent,omitempty"`
	// Requests are an LLM execution's model requests, each with the whole
	// message list it sent, rebuilt from the record's model_requests and
	// the memories it refers to (docs/llm.md#what-is-recorded).
	Requests []llmtrace.Sent `json:"requests,omitempty"`
	// ChildBefore counts, by agent name, the records of the child ensemble
	// this execution ran (if it ran one) in the executions of Path before it
	// in the turn: the number of an execution of PATH/AGENT in this one is
	// ChildBefore[AGENT] plus its place among this one's.
	ChildBefore map[string]int `json:"child_before,omitempty"`
}

// apiExecution is GET /api/run/execution?db=N&id=ID&agent=NAME&n=K[&turn=T]:
// execution K of agent NAME (K 0: a skip, with turn); turn spares looking
// for its turn.
func (s *Server) apiExecution(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	agentName := q.Get("agent")
	n, err := strconv.Atoi(q.Get("n"))
	if agentName == "" || err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "agent and n: an agent's name and the number of its execution, from 1")
		return
	}
	turn := 0
	if v := q.Get("turn"); v != "" {
		if turn, err = strconv.Atoi(v); err != nil {
			writeError(w, http.StatusBadRequest, "turn: a turn number")
			return
		}
	}
	if strings.Contains(agentName, "/") {
		ex, err := s.childExecution(i, d, info, agentName, n, turn)
		if err != nil {
			s.fail(w, err)
			return
		}
		s.reply(w, ex)
		return
	}
	d.mu.Lock()
	if turn == 0 && d.db != nil {
		// Its turn from the run's totals (counted when the run was shown),
		// so that one row is read, not every turn of the run ("Compare
		// with"); a run being counted still is searched.
		if t, _, err := s.tally(i, d, info); err == nil {
			turn = t.Agents[agentName].TurnOf(n)
		}
	}
	rec, err := d.db.Execution(info, agentName, n, turn)
	var mem json.RawMessage
	var sent []llmtrace.Sent
	if err == nil {
		mem, _ = d.db.MemoryAt(info, rec.TurnNumber, agentName)
		sent = requestsSent(d.db, info, rec, mem)
	}
	d.mu.Unlock()
	if err != nil {
		s.fail(w, err)
		return
	}
	ex := &Execution{Record: rec, Requests: sent}
	if len(mem) > 0 {
		ex.Memory = &mem
	}
	s.reply(w, ex)
}

// childExecution is record n (from 1) of path, an agent of a child
// ensemble (`review/critic`, `analyst[1]/think`), in the execution of turn
// that ran it (0: the last execution of the path's first agent).
func (s *Server) childExecution(i int, d *database, info *store.RunInfo, path string, n, turn int) (*Execution, error) {
	top, _, _ := strings.Cut(path, "/")
	if n < 1 {
		return nil, &httpError{http.StatusBadRequest, "n: the number of an execution of " + path + " within the execution that ran it, from 1"}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil, &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	}
	turns := map[int][]*state.Record{}
	var recs []*state.Record
	if turn > 0 {
		var err error
		if recs, err = turnRecords(d.db, info, turn, turns); err != nil {
			return nil, err
		}
	} else {
		t, _, err := s.tally(i, d, info)
		if err != nil {
			return nil, err
		}
		rec, err := lastExecution(d.db, info, top, t.Agents[top], turns)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs, turn = []*state.Record{rec}, rec.TurnNumber
		}
	}
	var tops []*state.Record
	for _, r := range recs {
		if r != nil && r.AgentName == top && !r.Skipped {
			tops = append(tops, r)
		}
	}
	found := exactPathRecords(tops, path)
	if n > len(found) {
		return nil, fmt.Errorf("%w: %s#%d in turn %d of run %s (%d there)", store.ErrNoExecution, path, n, turn, info.ID, len(found))
	}
	rec := found[n-1]
	// An execution's record holds the request it was given; a slim one
	// holds none.
	slim := rec.InputData == nil && !rec.Skipped
	var parent *ExecutionRef
	for _, r := range tops {
		if len(agentpath.PathRecords([]*state.Record{r}, path)) > 0 {
			parent = &ExecutionRef{Agent: r.AgentName, N: r.Execution, Turn: r.TurnNumber}
			break
		}
	}
	ex := &Execution{Record: rec, Path: path, Turn: turn, Count: len(found), Slim: slim, Parent: parent,
		Requests: requestsSent(nil, info, rec, nil)}
	if rec.Child() != nil {
		for _, r := range found[:n-1] {
			c := r.Child()
			if c == nil {
				continue
			}
			for _, run := range c.Runs() {
				for _, cr := range run.ConversationHistory {
					if cr == nil {
						continue
					}
					if ex.ChildBefore == nil {
						ex.ChildBefore = map[string]int{}
					}
					ex.ChildBefore[cr.AgentName]++
				}
			}
		}
	}
	return ex, nil
}

// requestsSent rebuilds the model requests of an LLM execution rec: the
// memory it sent is the one its reference names (read from the turn of
// the execution that left it: one row), the messages it added are in the
// memory it left (after).
func requestsSent(db *store.DB, info *store.RunInfo, rec *state.Record, after json.RawMessage) []llmtrace.Sent {
	var tr llmtrace.Trace
	if ok, err := rec.Details.Decode(llmtrace.Detail, &tr); !ok || err != nil || len(tr.Requests) == 0 {
		return nil
	}
	var memSent []json.RawMessage
	n := 0
	if m := tr.Memory; m != nil {
		n = m.Messages
		if db != nil {
			if prev, err := db.MemoryAt(info, m.Turn, rec.AgentName); err == nil {
				memSent = llmtrace.Messages(prev)
			}
		}
	}
	if msgs := llmtrace.Messages(after); len(msgs) > 0 {
		return llmtrace.RebuildCapped(&tr, llmtrace.Conversation(memSent, msgs, n), maxRequestsBytes)
	}
	// No memory after it at hand (an agent of a child ensemble): the
	// messages it added are in its record.
	return llmtrace.RebuildCapped(&tr, llmtrace.WithAdded(memSent, n, rec.InputData), maxRequestsBytes)
}

// maxRequestsBytes bounds the message lists of one execution's requests
// in a reply: each request repeats the conversation so far, and a long
// memory sent by a long tool loop would make the reply its square.
const maxRequestsBytes = 32 << 20
