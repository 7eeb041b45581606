package inspector_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAPIRefusalsAreJSON: every refusal under /api/ is the API's one
// error shape, {"error": MESSAGE}, JSON, with its status: a path no route
// takes is a 404 (never the mux's redirect nor its plain-text page), one
// a route takes with another method a 405 with Allow.
func TestAPIRefusalsAreJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		token, host  string // "": the right ones
		body         string
		want         int
		allow        string
	}{
		{method: "GET", path: "/api", want: 404},
		{method: "GET", path: "/api/", want: 404},
		{method: "GET", path: "/api/nothing", want: 404},
		{method: "GET", path: "/api/run/../runs", want: 404},
		{method: "GET", path: "/api//runs", want: 404},
		{method: "GET", path: "/api/runs/", want: 404},
		{method: "POST", path: "/api/runs", want: 405, allow: "GET, HEAD"},
		{method: "GET", path: "/api/run/answer", want: 405, allow: "POST"},
		{method: "DELETE", path: "/api/run", want: 405, allow: "GET, HEAD"},
		{method: "GET", path: "/api/runs", token: "secret-tokeN", want: 403},
		{method: "GET", path: "/api", token: "wrong", want: 403},
		{method: "GET", path: "/api/nothing", token: "wrong", want: 403},
		{method: "GET", path: "/api/runs", host: "evil.example", want: 403},
		{method: "GET", path: "/api/runs?db=9", want: 404},
		{method: "GET", path: "/api/run?id=no-such-run", want: 404},
		{method: "GET", path: "/api/run/turns?id=" + f.mapReduce + "&after=x", want: 400},
		{method: "POST", path: "/api/run/answer?id=" + f.approval, body: "{not json", want: 400},
	} {
		name := tc.method + " " + tc.path
		req, err := http.NewRequest(tc.method, f.ts.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Ensemble-Token", "secret-token")
		if tc.token != "" {
			req.Header.Set("X-Ensemble-Token", tc.token)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d: %s", name, resp.StatusCode, tc.want, data)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil || len(body) != 1 || body["error"] == nil || body["error"] == "" {
			t.Errorf("%s: %s, want {\"error\": MESSAGE}", name, data)
		}
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Errorf("%s: Allow %q, want %q", name, got, tc.allow)
		}
	}
}
