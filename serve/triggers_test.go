package serve_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/serve"
	"github.com/ensemble-run/ensemble/store"
)

const hookSecret = "hook-secret-0123"

// fakeClock is the time the servers' cron triggers read.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// triggered writes a folder serving the ensemble "trig" (one script) with
// the given triggers: (YAML list items).
func triggered(t *testing.T, triggers string) string {
	t.Helper()
	dir := t.TempDir()
	step, err := os.ReadFile("testdata/count/step.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "step.py"), step, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "name: trig\ninput: scheduled\nagents:\n  - name: one\n    script: step.py\ntriggers:\n" + triggers
	if err := os.WriteFile(filepath.Join(dir, "ensemble.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func withClock(c *fakeClock, state string) func(*serve.Options) {
	return func(o *serve.Options) {
		o.Clock, o.TriggerPoll = c.Now, 5*time.Millisecond
		// A restart lets the runs going on finish: one cut short would
		// run its uncommitted turn again, as it should, and count twice.
		o.Grace = patience
		if state != "" {
			o.State = state
		}
		o.LookupEnv = lookup(map[string]string{"HOOK_SECRET": hookSecret})
	}
}

// fires lists the claimed fires of the trigger key of trig.
func fires(t *testing.T, state, key string) []store.Fire {
	t.Helper()
	db, err := store.Open(state, false, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f, err := db.Fires("trig", key)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitFires waits until the trigger has n claimed fires.
func waitFires(t *testing.T, state, key string, n int) []store.Fire {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		f := fires(t, state, key)
		if len(f) >= n {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fires, want %d", len(f), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runIDs lists the runs of trig through the API.
func runIDs(t *testing.T, s *server) []string {
	t.Helper()
	code, b, _ := s.do(t, "GET", "/v1/runs?ensemble=trig&limit=100", nil)
	if code != http.StatusOK {
		t.Fatalf("GET runs: %d %s", code, b)
	}
	var page struct {
		Runs []struct {
			ID string `json:"run_id"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var ids []string
	for _, r := range page.Runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// A cron trigger fires exactly once a minute over five minutes of a fake
// clock, with two servers on one database and one of them restarted in
// the middle: each fire is one claimed row and one run, whose id is the
// fire's.
func TestCronFiresOncePerMinute(t *testing.T) {
	t.Parallel()
	dir := triggered(t, "  - cron: \"* * * * *\"\n    input: tick\n")
	state := filepath.Join(t.TempDir(), "s.db")
	key := "cron * * * * * UTC"
	t0 := time.Date(2026, 12, 7, 9, 0, 30, 0, time.UTC)
	clock := &fakeClock{t: t0}
	a := startServer(t, dir, withClock(clock, state))
	b := startServer(t, dir, withClock(clock, state))
	for m := 1; m <= 5; m++ {
		if m == 3 { // a restart in the middle
			a.stop()
			a = startServer(t, dir, withClock(clock, state))
		}
		clock.Set(t0.Add(time.Duration(m) * time.Minute))
		waitFires(t, state, key, m)
	}
	got := fires(t, state, key)
	var want []string
	for m := 1; m <= 5; m++ {
		at := time.Date(2026, 12, 7, 9, m, 0, 0, time.UTC)
		if len(got) >= m && !got[m-1].Time.Equal(at) {
			t.Errorf("fire %d at %s, want %s", m, got[m-1].Time, at)
		}
		if len(got) >= m {
			want = append(want, got[m-1].RunID)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d fires, want 5: %+v", len(got), got)
	}
	for _, id := range want {
		a.waitStatus(t, id, "completed")
	}
	slices.Sort(want)
	if ids := runIDs(t, b); !slices.Equal(ids, want) {
		t.Errorf("runs %v, want one per fire %v", ids, want)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "count.log"))
	if n := strings.Count(string(log), "tick one\n"); n != 5 {
		t.Errorf("the script ran %d times, want 5:\n%s", n, log)
	}
}

// A fire missed while no server ran starts one run when a server starts:
// the latest missed fire only; then the schedule goes on.
func TestCronMissedFireRunsOnce(t *testing.T) {
	t.Parallel()
	dir := triggered(t, "  - cron: \"* * * * *\"\n")
	state := filepath.Join(t.TempDir(), "s.db")
	key := "cron * * * * * UTC"
	t0 := time.Date(2026, 12, 7, 9, 0, 30, 0, time.UTC)
	clock := &fakeClock{t: t0}
	s := startServer(t, dir, withClock(clock, state))
	s.stop()
	if f := fires(t, state, key); len(f) != 0 {
		t.Fatalf("fires before any minute passed: %+v", f)
	}
	clock.Set(t0.Add(7 * time.Minute)) // 09:07:30: seven fires missed
	s = startServer(t, dir, withClock(clock, state))
	f := waitFires(t, state, key, 1)
	if len(f) != 1 || !f[0].Time.Equal(time.Date(2026, 12, 7, 9, 7, 0, 0, time.UTC)) {
		t.Fatalf("fires after the restart: %+v, want the 09:07 one only", f)
	}
	s.waitStatus(t, f[0].RunID, "completed")
	clock.Set(t0.Add(8 * time.Minute))
	f = waitFires(t, state, key, 2)
	if len(f) != 2 || !f[1].Time.Equal(time.Date(2026, 12, 7, 9, 8, 0, 0, time.UTC)) {
		t.Fatalf("fires: %+v", f)
	}
	s.waitStatus(t, f[1].RunID, "completed")
	if ids := runIDs(t, s); len(ids) != 2 {
		t.Errorf("runs %v, want 2", ids)
	}
}

// A webhook trigger starts a run for a request signed with its secret
// (GitHub's header), without the server's token; a bad or missing
// signature is 401, a body over the cap 413, a path under /hooks/ that
// is no trigger's 404; its input is its template over the body and
// headers.
func TestWebhookTrigger(t *testing.T) {
	t.Parallel()
	dir := triggered(t, `  - webhook:
      path: /hooks/pr
      secret_env: HOOK_SECRET
      input: "review {{ body.pull_request.html_url }} on {{ headers['x-github-event'] }}"
  - webhook: {path: /hooks/raw, secret_env: HOOK_SECRET}
`)
	s := startServer(t, dir, func(o *serve.Options) {
		withClock(&fakeClock{t: time.Now()}, "")(o)
		o.MaxBody = 4 << 10
	})
	body := `{"action":"opened","pull_request":{"html_url":"https://github.com/o/r/pull/7"}}`
	sign := func(b string) string { return serve.Sign([]byte(hookSecret), []byte(b)) }
	post := func(path, b string, headers ...string) (int, []byte) {
		t.Helper()
		// no token: the header "Authorization" given replaces it
		code, out, _ := s.do(t, "POST", path, b, append([]string{"Authorization", "", "Content-Type", "application/json"}, headers...)...)
		return code, out
	}

	for _, tc := range []struct {
		name, path, body string
		headers          []string
		code             int
	}{
		{"no signature", "/hooks/pr", body, nil, http.StatusUnauthorized},
		{"wrong secret", "/hooks/pr", body, []string{serve.HookSignatureHeader, serve.Sign([]byte("other"), []byte(body))}, http.StatusUnauthorized},
		{"another body's", "/hooks/pr", body, []string{serve.HookSignatureHeader, sign(body + " ")}, http.StatusUnauthorized},
		{"not hex", "/hooks/pr", body, []string{serve.HookSignatureHeader, "sha256=zz"}, http.StatusUnauthorized},
		{"sha1", "/hooks/pr", body, []string{serve.HookSignatureHeader, strings.Replace(sign(body), "sha256=", "sha1=", 1)}, http.StatusUnauthorized},
		{"oversized", "/hooks/pr", strings.Repeat("x", 5<<10), []string{serve.HookSignatureHeader, sign(strings.Repeat("x", 5<<10))}, http.StatusRequestEntityTooLarge},
		{"no such hook", "/hooks/other", body, []string{serve.HookSignatureHeader, sign(body)}, http.StatusNotFound},
		{"template fails", "/hooks/pr", `{"zen":"ping"}`, []string{serve.HookSignatureHeader, sign(`{"zen":"ping"}`)}, http.StatusUnprocessableEntity},
		{"ping", "/hooks/pr", `{"zen":"x"}`, []string{serve.HookSignatureHeader, sign(`{"zen":"x"}`), "X-GitHub-Event", "ping"}, http.StatusOK},
	} {
		if code, out := post(tc.path, tc.body, tc.headers...); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, code, out, tc.code)
		}
	}
	// The run API still wants the token: only the hooks' paths skip it.
	if code, _, _ := s.do(t, "GET", "/v1/runs", nil, "Authorization", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/runs without a token: %d", code)
	}
	if ids := runIDs(t, s); len(ids) != 0 {
		t.Fatalf("runs started by refused requests: %v", ids)
	}

	code, out := post("/hooks/pr", body, serve.HookSignatureHeader, sign(body), "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1")
	if code != http.StatusAccepted {
		t.Fatalf("signed request: %d %s", code, out)
	}
	var r struct {
		RunID    string `json:"run_id"`
		Ensemble string `json:"ensemble"`
	}
	json.Unmarshal(out, &r)
	if r.RunID == "" || r.Ensemble != "trig" {
		t.Fatalf("reply %s", out)
	}
	s.waitStatus(t, r.RunID, "completed")
	// The same delivery again (GitHub's redelivery) is the same run.
	if code, again := post("/hooks/pr", body, serve.HookSignatureHeader, sign(body), "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", "d-1"); code != http.StatusOK || !strings.Contains(string(again), r.RunID) {
		t.Errorf("redelivery: %d %s", code, again)
	}
	// Without a template the input is the body's text.
	raw := `{"n":1}`
	if code, out := post("/hooks/raw", raw, serve.HookSignatureHeader, sign(raw)); code != http.StatusAccepted {
		t.Fatalf("raw hook: %d %s", code, out)
	} else {
		json.Unmarshal(out, &r)
		s.waitStatus(t, r.RunID, "completed")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "count.log"))
	want := "review https://github.com/o/r/pull/7 on pull_request one\n" + raw + " one\n"
	if string(log) != want {
		t.Errorf("the runs' inputs:\n%s\nwant:\n%s", log, want)
	}
}

// Two served files cannot share a webhook path, and a webhook's secret
// must be set.
func TestWebhookTriggerRefused(t *testing.T) {
	t.Parallel()
	dir := triggered(t, "  - webhook: {path: /hooks/pr, secret_env: HOOK_SECRET}\n")
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "ensemble.yaml"), []byte("name: other\nagents:\n  - name: a\n    ask: why?\ntriggers:\n  - webhook: {path: /hooks/pr, secret_env: HOOK_SECRET}\n"), 0o644)
	o := serve.Options{Paths: []string{dir}, State: filepath.Join(t.TempDir(), "s.db"), Listen: "127.0.0.1:0", NoUI: true,
		LookupEnv: lookup(map[string]string{"HOOK_SECRET": hookSecret})}
	if _, err := serve.New(o); err == nil || !strings.Contains(err.Error(), "webhook path /hooks/pr is also that of the trigger at") {
		t.Errorf("a shared path: %v", err)
	}
	os.RemoveAll(other)
	o.LookupEnv = lookup(nil)
	if _, err := serve.New(o); err == nil || !strings.Contains(err.Error(), "$HOOK_SECRET is not set") {
		t.Errorf("no secret: %v", err)
	}
}

// A fire claimed by a server killed before its run was saved starts at
// the next start, under the fire's run id, when no later fire came since.
func TestCronClaimWithoutRunStartsAtStart(t *testing.T) {
	t.Parallel()
	dir := triggered(t, "  - cron: \"0 * * * *\"\n")
	state := filepath.Join(t.TempDir(), "s.db")
	key := "cron 0 * * * * UTC"
	fire := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	db, err := store.Open(state, true, store.SyncNormal)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.WatchTrigger("trig", key, fire.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	const id = "cron-trig-lost-20261207T0900Z"
	if ok, err := db.ClaimFire("trig", key, fire, id, fire); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	db.Close()
	clock := &fakeClock{t: fire.Add(5 * time.Minute)}
	s := startServer(t, dir, withClock(clock, state))
	s.waitStatus(t, id, "completed")
	if f := fires(t, state, key); len(f) != 1 {
		t.Errorf("fires %+v, want the one claimed", f)
	}
}
