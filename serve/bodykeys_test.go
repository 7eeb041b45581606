package serve_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/serve"
)

// A body key the API does not know (a typo) is a 400 that names it and
// the key meant, and starts no run: the run would otherwise go on without
// the value the caller thought it gave.
func TestUnknownBodyKeyIsRefused(t *testing.T) {
	t.Parallel()
	s := startServer(t, ensembles(t), nil)
	for _, c := range []struct {
		path string
		body any
		want string
	}{
		{"/v1/ensembles/count/runs", map[string]any{"inptu": "x"}, `unknown key "inptu" (it takes input, run_id, webhook); did you mean "input"?`},
		{"/v1/ensembles/count/runs", map[string]any{"input": "x", "runid": "r1"}, `did you mean "run_id"?`},
		{"/v1/runs/any/fork", map[string]any{"fromturn": 1}, `unknown key "fromturn" (it takes from_turn); did you mean "from_turn"?`},
	} {
		code, b, _ := s.do(t, "POST", c.path, c.body)
		var e serve.ErrorBody
		_ = json.Unmarshal(b, &e)
		if code != 400 || e.Error.Code != "bad_request" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("POST %s %v: %d %s, want 400 and %q", c.path, c.body, code, b, c.want)
		}
	}
	if code, b, _ := s.do(t, "GET", "/v1/runs", nil); code != 200 || strings.Contains(string(b), "run_id") {
		t.Errorf("a refused body started a run: %d %s", code, b)
	}
}
