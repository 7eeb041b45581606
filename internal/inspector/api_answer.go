package inspector

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// The API's writes: answering a waiting run, and forking one.

// answerBody is the body of POST /api/run/answer.
type answerBody struct {
	Answers map[string]string `json:"answers"`
	// Turns is the run's turn count the answers were given for (its
	// questions are those of that turn); absent: the run's as it is.
	Turns *int `json:"turns"`
}

// apiAnswer is POST /api/run/answer?db=N&id=ID {"answers": {AGENT: TEXT},
// "turns": T}: the run goes on with the answers, in the background; with
// turns, only if it is still at that turn.
func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var body answerBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "the body: {\"answers\": {\"AGENT\": \"TEXT\"}}: "+err.Error())
		return
	}
	if len(body.Answers) == 0 {
		writeError(w, http.StatusBadRequest, "no answer given")
		return
	}
	if err := s.resume(i, d.path, info.ID, body.Answers, body.Turns); err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"db": i, "id": info.ID, "status": StatusRunning})
}

// forkBody is the body of POST /api/run/fork.
type forkBody struct {
	Turn *int `json:"turn"`
}

// apiFork is POST /api/run/fork?db=N&id=ID {"turn": N}: a new run whose
// first N turns are the run's, which goes on in the background.
func (s *Server) apiFork(w http.ResponseWriter, r *http.Request) {
	i, d, info, err := s.runOf(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var body forkBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Turn == nil {
		writeError(w, http.StatusBadRequest, "the body: {\"turn\": N}")
		return
	}
	turn := *body.Turn
	if turn < 0 || turn > info.Turns {
		writeError(w, http.StatusBadRequest, "turn: from 0 to the run's "+strconv.Itoa(info.Turns))
		return
	}
	id, err := s.fork(i, d.path, info.ID, turn)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"db": i, "id": id, "status": StatusRunning})
}
