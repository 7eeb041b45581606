package inspector

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/internal/secrets"
	"github.com/ensemble-run/ensemble/store"
)

// An error the API answers with is redacted as its replies are: it may
// quote what a run or an ensemble file holds.
func TestErrorRepliesAreRedacted(t *testing.T) {
	t.Parallel()
	const key = "sk-inspector-secret-0123456789"
	s := &Server{redact: secrets.New(key)}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{errors.New("the model said: bad key " + key), http.StatusInternalServerError},
		{&httpError{http.StatusConflict, `changed: {"api_key": "` + key + `"}`}, http.StatusConflict},
		{errors.Join(store.ErrNoRun, errors.New(key)), http.StatusNotFound},
		{fmt.Errorf("%w (%s)", &store.ForkError{Run: "r", Turn: 9, Turns: 4}, key), http.StatusBadRequest},
	} {
		w := httptest.NewRecorder()
		s.fail(w, tc.err)
		if body := w.Body.String(); w.Code != tc.code || strings.Contains(body, key) || !strings.Contains(body, secrets.Redacted) {
			t.Errorf("%v: %d %s", tc.err, w.Code, body)
		}
	}
}
