package inspector

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ensemble-run/ensemble/internal/llmtrace"
	"github.com/ensemble-run/ensemble/state"
	"github.com/ensemble-run/ensemble/store"
)

// Match is a place of a run that holds the text searched for: a field of
// an execution (its output, input, error or stderr), or a message of an
// LLM agent's conversation, which the execution of its turn left.
type Match struct {
	Turn int `json:"turn"`
	// Agent and N name the execution as GET /api/run/execution takes it
	// (with Turn): for an agent of a child ensemble, its path and its
	// place among the path's records in the turn's execution that ran it.
	Agent string `json:"agent"`
	N     int    `json:"n"`
	// Field is output, input, error, stderr or message.
	Field string `json:"field"`
	// Role is a message's role.
	Role string `json:"role,omitempty"`
	// Snippet is the text around the first place it is found, at most
	// snippetRunes either side; Count how often the field holds it.
	Snippet string `json:"snippet"`
	Count   int    `json:"count"`
}

// SearchResult is what GET /api/run/search answers.
type SearchResult struct {
	Matches []Match `json:"matches"`
	// Searched is the last turn looked into, of the run's Last: when
	// More, the next page starts after it.
	Searched int  `json:"searched"`
	Last     int  `json:"last"`
	More     bool `json:"more,omitempty"`
}

const (
	maxNeedle     = 200 // the longest text searched for, in bytes
	defaultLimit  = 50
	maxMatches    = 200
	snippetRunes  = 60
	maxChildDepth = 4
)

// apiSearch is GET /api/run/search?db=N&id=ID&q=TEXT[&after=T][&limit=L]:
// the places of the run's turns after T (default 0) whose outputs, inputs,
// errors, stderr or model messages hold TEXT, case aside, at most L of
// them (default 50, at most 200), in order.
func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	_, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	needle := q.Get("q")
	if strings.TrimSpace(needle) == "" || len(needle) > maxNeedle {
		writeError(w, http.StatusBadRequest, "q: the text to search for, 1 to "+strconv.Itoa(maxNeedle)+" bytes")
		return
	}
	after, limit := 0, defaultLimit
	if v := q.Get("after"); v != "" {
		if after, err = strconv.Atoi(v); err != nil || after < 0 {
			writeError(w, http.StatusBadRequest, "after: a turn number")
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			writeError(w, http.StatusBadRequest, "limit: a positive number of matches")
			return
		}
	}
	limit = min(limit, maxMatches)
	// Secrets are redacted from what is searched: a search must not tell
	// whether a run holds a secret. Those the run's models name are known
	// once its ensemble file is loaded.
	d.mu.Lock()
	var h *store.Head
	if d.db == nil {
		err = &httpError{http.StatusServiceUnavailable, "the server is stopping"}
	} else {
		h, err = d.db.Head(info)
	}
	d.mu.Unlock()
	if err != nil {
		s.fail(w, err)
		return
	}
	s.ensembleOf(h)
	s.mu.Lock()
	red := s.redact
	s.mu.Unlock()
	sr := &searcher{needle: strings.ToLower(needle), limit: limit, base: h.Base, seen: map[string]map[[32]byte]bool{}, redact: red.String}
	res := &SearchResult{Matches: []Match{}, Searched: after, Last: info.Turns}
	for res.Searched < info.Turns && len(sr.out) < limit && r.Context().Err() == nil {
		d.mu.Lock()
		if d.db == nil {
			d.mu.Unlock()
			s.fail(w, &httpError{http.StatusServiceUnavailable, "the server is stopping"})
			return
		}
		res.Searched, err = sr.page(d.db, info, res.Searched)
		d.mu.Unlock()
		if err != nil {
			s.fail(w, err)
			return
		}
	}
	res.Matches = append(res.Matches, sr.out...)
	res.More = res.Searched < info.Turns
	if len(res.Matches) > limit {
		res.Matches = res.Matches[:limit]
	}
	s.reply(w, res)
}

// searcher looks for a text in the turns of a run, a page at a time.
type searcher struct {
	needle string // in lower case
	limit  int
	base   int // the turns of the run's first state (a fork's copies)
	out    []Match
	// seen are the hashes of the messages of each agent's memory looked
	// into already: a memory repeats the messages of the turns before.
	seen   map[string]map[[32]byte]bool
	redact func(string) string
}

// page looks into the turns after turn after, and returns the last one it
// looked into. The turns a fork copied are read from the run's first
// state; the others are filtered by SQLite first (store.SearchTurns).
func (sr *searcher) page(db *store.DB, info *store.RunInfo, after int) (int, error) {
	if after < sr.base {
		turns, err := db.Turns(info, after, min(sr.base-after, maxPage))
		if err != nil {
			return after, err
		}
		for _, t := range turns {
			sr.turn(t.Turn, t.Records, nil)
			after = t.Turn
			if len(sr.out) >= sr.limit {
				break
			}
		}
		if len(turns) == 0 {
			after = sr.base
		}
		return after, nil
	}
	rows, last, err := db.SearchTurns(info, prefilter(sr.needle), after, sr.limit-len(sr.out))
	if err != nil {
		return after, err
	}
	for _, row := range rows {
		var recs []*state.Record
		if err := json.Unmarshal(row.Records, &recs); err != nil {
			return after, err
		}
		sr.turn(row.Turn, recs, row.Memory)
		if len(sr.out) >= sr.limit {
			return row.Turn, nil
		}
	}
	return min(last, info.Turns), nil
}

// prefilter is the longest part of needle (in lower case) that a turn's
// stored JSON holds as it is when the turn holds needle: ASCII letters,
// digits, spaces and the punctuation JSON writes as it is.
func prefilter(needle string) string {
	best, cur := "", 0
	for i := 0; i <= len(needle); i++ {
		if i < len(needle) {
			c := needle[i]
			if c >= 0x20 && c < 0x7f && !strings.ContainsRune(`"\<>&`, rune(c)) {
				continue
			}
		}
		if i-cur > len(best) {
			best = needle[cur:i]
		}
		cur = i + 1
	}
	return best
}

// turn looks into the records of a turn and the memories it changed.
func (sr *searcher) turn(turn int, recs []*state.Record, memory json.RawMessage) {
	counts := map[string]int{}
	for _, r := range recs {
		if r != nil {
			sr.record(turn, r, "", counts, 0)
		}
	}
	if len(memory) == 0 {
		return
	}
	var mems map[string]json.RawMessage
	if json.Unmarshal(memory, &mems) != nil {
		return
	}
	for _, name := range sortedKeys(mems) {
		n := 0
		for _, r := range recs {
			if r != nil && r.AgentName == name && !r.Skipped {
				n = r.Execution
			}
		}
		if n == 0 {
			continue
		}
		if sr.seen[name] == nil {
			sr.seen[name] = map[[32]byte]bool{}
		}
		for _, m := range llmtrace.Messages(mems[name]) {
			sum := sha256.Sum256(m)
			if sr.seen[name][sum] {
				continue
			}
			sr.seen[name][sum] = true
			var msg struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			}
			json.Unmarshal(m, &msg)
			text, ok := msg.Content.(string)
			if !ok || !strings.Contains(strings.ToLower(text), sr.needle) {
				text = string(m) // tool calls, structured content
			}
			sr.field(Match{Turn: turn, Agent: name, N: n, Field: "message", Role: msg.Role}, text)
		}
	}
}

// record looks into the fields of r, a record of the turn at path prefix
// (its parent's path and "/", "" for the run's own agents), and into the
// records of the child ensemble it ran; counts numbers the records of
// each path in the turn.
func (sr *searcher) record(turn int, r *state.Record, prefix string, counts map[string]int, depth int) {
	path := prefix + r.AgentName
	n := r.Execution
	if prefix != "" {
		counts[path]++
		n = counts[path]
	}
	if !r.Skipped && (prefix != "" || n > 0) {
		m := Match{Turn: turn, Agent: path, N: n}
		for _, f := range []struct {
			name string
			v    any
		}{{"output", r.OutputData}, {"input", r.InputData}, {"error", r.Error}, {"stderr", r.Stderr}} {
			m.Field = f.name
			sr.field(m, textOf(f.v))
		}
	}
	if depth >= maxChildDepth {
		return
	}
	if c := r.Child(); c != nil {
		for _, run := range c.Runs() {
			for _, cr := range run.ConversationHistory {
				if cr != nil {
					sr.record(turn, cr, path+"/", counts, depth+1)
				}
			}
		}
	}
}

// field adds m when text holds the needle.
func (sr *searcher) field(m Match, text string) {
	if text == "" || len(sr.out) >= sr.limit {
		return
	}
	text = sr.redact(text)
	low := strings.ToLower(text)
	i := strings.Index(low, sr.needle)
	if i < 0 {
		return
	}
	m.Count = strings.Count(low, sr.needle)
	if len(low) != len(text) {
		// Lower case changed the length: the place is found again in text,
		// rune by rune.
		i = runeIndexFold(text, sr.needle)
	}
	m.Snippet = snippet(text, i, len(sr.needle))
	sr.out = append(sr.out, m)
}

// runeIndexFold is the byte index in text where needle (in lower case)
// starts, case aside; 0 when it is not found.
func runeIndexFold(text, needle string) int {
	for i := range text {
		if strings.HasPrefix(strings.ToLower(text[i:min(len(text), i+len(needle)+8)]), needle) {
			return i
		}
	}
	return 0
}

// snippet is text around its bytes from i (n of them), snippetRunes runes
// either side, with … where it is cut.
func snippet(text string, i, n int) string {
	start := i
	for k := 0; k < snippetRunes && start > 0; k++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	end := min(len(text), i+n)
	for k := 0; k < snippetRunes && end < len(text); k++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	out := text[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(text) {
		out += "…"
	}
	return out
}

// textOf is a field's value as the page shows it: a string as it is, a
// JSON value compact.
func textOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case *string:
		if v == nil {
			return ""
		}
		return *v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
