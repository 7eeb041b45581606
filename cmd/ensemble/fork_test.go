package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// copyFork copies testdata/fork, the loop of resume --from-turn's tests,
// to a folder of its own (a test changes its ensemble file).
func copyFork(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"ensemble.yaml", "responses.yaml", "responses-b.yaml", "scripts/never.sh"} {
		b, err := os.ReadFile("testdata/fork/" + name)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// exported is a run of a state database as state export prints it.
type exported struct {
	Parent *struct {
		Run  string `json:"run_id"`
		Turn int    `json:"turn"`
	} `json:"parent"`
	State struct {
		TurnCount int              `json:"turn_count"`
		History   []map[string]any `json:"conversation_history"`
	} `json:"state"`
}

func exportRun(t *testing.T, db, id string) (string, *exported) {
	t.Helper()
	o := ensembleCmd(t, "", "state", "export", db, "--run-id", id)
	if o.code != 0 {
		t.Fatalf("state export %s: exit %d %s", id, o.code, o.stderr)
	}
	var x exported
	if err := json.Unmarshal([]byte(o.stdout), &x); err != nil {
		t.Fatal(err)
	}
	return o.stdout, &x
}

// outputs are the agents and outputs of a run's history, in order.
func outputs(x *exported) []string {
	var out []string
	for _, r := range x.State.History {
		b, _ := json.Marshal(r["output_data"])
		out = append(out, r["agent_name"].(string)+" "+string(b))
	}
	return out
}

// resume --from-turn 2 of a run of 4 turns, with other responses: a new
// run whose turns 1 and 2 are the run's (copied, records and all), whose
// turns 3 and 4 take the new responses by agent and execution (the
// writer's second execution its second response, not its first or
// third), with its parent recorded and listed. The run forked stays as it
// was, byte for byte.
func TestResumeFromTurnForks(t *testing.T) {
	t.Parallel()
	dir := copyFork(t)
	ens, db := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "runs.db")
	if o := ensembleCmd(t, "", "run", ens, "--responses", filepath.Join(dir, "responses.yaml"), "--state", db, "--run-id", "orig", "--output", "json"); o.code != 0 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	before, orig := exportRun(t, db, "orig")
	if got := outputs(orig); !reflect.DeepEqual(got, []string{`writer "draft A1"`,
		`reviewer {"agent_requests":[{"target_agent_name":"writer"}],"approved":false,"by":"A1"}`,
		`writer "draft A2"`, `reviewer {"approved":true,"by":"A2"}`}) {
		t.Fatalf("the run to fork ran %q", got)
	}

	o := ensembleCmd(t, "", "resume", db, "--run-id", "orig", "--from-turn", "2", "--responses", filepath.Join(dir, "responses-b.yaml"), "--output", "json")
	if o.code != 0 {
		t.Fatalf("resume --from-turn 2: exit %d %s", o.code, o.stderr)
	}
	var res struct {
		TurnCount int `json:"turn_count"`
		Parent    struct {
			Run  string `json:"run_id"`
			Turn int    `json:"turn"`
		} `json:"parent"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil || res.TurnCount != 4 || res.Parent.Run != "orig" || res.Parent.Turn != 2 {
		t.Fatalf("the fork's result: %v\n%s", err, o.stdout)
	}
	if after, _ := exportRun(t, db, "orig"); after != before {
		t.Errorf("the run forked changed:\n%s\nwas\n%s", after, before)
	}

	list := ensembleCmd(t, "", "state", "list", db)
	lines := strings.Split(strings.TrimSpace(list.stdout), "\n")
	if list.code != 0 || len(lines) != 3 || !strings.HasSuffix(lines[0], "FORKED FROM") || !strings.HasPrefix(lines[1], "orig ") ||
		!strings.HasSuffix(lines[1], " -") || !strings.HasSuffix(lines[2], "orig at turn 2") {
		t.Fatalf("state list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
	fork := strings.Fields(lines[2])[0]
	_, x := exportRun(t, db, fork)
	if x.Parent == nil || x.Parent.Run != "orig" || x.Parent.Turn != 2 || x.State.TurnCount != 4 {
		t.Fatalf("the fork's export: parent %+v, %d turns", x.Parent, x.State.TurnCount)
	}
	if !reflect.DeepEqual(x.State.History[:2], orig.State.History[:2]) {
		t.Errorf("the fork's first turns\n%v\nwant the run's\n%v", x.State.History[:2], orig.State.History[:2])
	}
	if got := outputs(x)[2:]; !reflect.DeepEqual(got, []string{`writer "draft B2"`, `reviewer {"approved":true,"by":"B2"}`}) {
		t.Errorf("the fork went on with %q, want the second responses of responses-b.yaml", got)
	}
	show := ensembleCmd(t, "", "state", "show", db, "--run-id", fork, "--output", "text")
	if show.code != 0 || !strings.Contains(show.stdout, "a fork of run orig: its first 2 turns are that run's") {
		t.Errorf("state show of the fork: exit %d %s%s", show.code, show.stdout, show.stderr)
	}

	// A fork of the fork, from turn 3, goes on with the fork's responses;
	// one from turn 0 starts from the input, with the run's.
	o = ensembleCmd(t, "", "resume", db, "--run-id", fork, "--from-turn", "3", "--output", "text")
	if o.code != 0 || !strings.Contains(o.stderr, "forked from run "+fork+" at turn 3, goes on from turn 4") {
		t.Fatalf("a fork of a fork: exit %d %s", o.code, o.stderr)
	}
	o = ensembleCmd(t, "", "resume", db, "--run-id", "orig", "--from-turn", "0", "--output", "text")
	if o.code != 0 {
		t.Fatalf("a fork from turn 0: exit %d %s", o.code, o.stderr)
	}
	list = ensembleCmd(t, "", "state", "list", db, "--output", "json")
	var runs []struct {
		ID         string `json:"id"`
		Parent     string `json:"parent"`
		ParentTurn *int   `json:"parent_turn"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 4 {
		t.Fatalf("state list --output json: %v\n%s", err, list.stdout)
	}
	if runs[0].Parent != "" || runs[0].ParentTurn != nil || runs[2].Parent != fork || runs[3].Parent != "orig" || runs[3].ParentTurn == nil || *runs[3].ParentTurn != 0 {
		t.Errorf("state list --output json: %s", list.stdout)
	}
	_, ff := exportRun(t, db, runs[2].ID)
	if got := outputs(ff)[3]; got != `reviewer {"approved":true,"by":"B2"}` {
		t.Errorf("the fork of the fork went on with %s, want the fork's responses", got)
	}
	_, f0 := exportRun(t, db, runs[3].ID)
	if got := outputs(f0); !reflect.DeepEqual(got, outputs(orig)) {
		t.Errorf("the fork from turn 0 ran %q, want the run's %q", got, outputs(orig))
	}
}

// A fork is refused, before anything is written, from a turn the run
// does not have, of a JSON state file, of a run the database does not
// hold, and, without --force, when the ensemble file changed.
func TestResumeFromTurnRefusals(t *testing.T) {
	t.Parallel()
	dir := copyFork(t)
	ens, db := filepath.Join(dir, "ensemble.yaml"), filepath.Join(dir, "runs.db")
	if o := ensembleCmd(t, "", "run", ens, "--responses", filepath.Join(dir, "responses.yaml"), "--state", db, "--run-id", "orig", "--output", "json"); o.code != 0 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	js := filepath.Join(dir, "orig.json")
	export, _ := exportRun(t, db, "orig")
	if err := os.WriteFile(js, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{db, "--run-id", "orig", "--from-turn", "5"}, []string{"cannot be forked from turn 5: it has 4 turns", "0 (its start) to 4"}},
		{[]string{db, "--run-id", "orig", "--from-turn", "-1"}, []string{"turn -1", "4 turns"}},
		{[]string{js, "--from-turn", "1"}, []string{"JSON state file", "forks need a state database"}},
		{[]string{db, "--run-id", "nope", "--from-turn", "1"}, []string{`holds no run "nope"`, "  orig  (fork, 4 turns, completed)"}},
	} {
		o := ensembleCmd(t, "", append([]string{"resume"}, c.args...)...)
		for _, want := range c.want {
			if o.code != 2 || !strings.Contains(o.stderr, want) {
				t.Errorf("resume %v: exit %d %s, want exit 2 saying %q", c.args, o.code, o.stderr, want)
			}
		}
	}
	appendTo(t, ens, "\n# changed\n")
	o := ensembleCmd(t, "", "resume", db, "--run-id", "orig", "--from-turn", "2")
	if o.code != 2 || !strings.Contains(o.stderr, "use --force") {
		t.Errorf("a fork of a changed ensemble: exit %d %s", o.code, o.stderr)
	}
	if list := ensembleCmd(t, "", "state", "list", db); strings.Count(strings.TrimSpace(list.stdout), "\n") != 1 {
		t.Errorf("a refused fork left a run behind:\n%s", list.stdout)
	}
	o = ensembleCmd(t, "", "resume", db, "--run-id", "orig", "--from-turn", "2", "--force", "--output", "text")
	if o.code != 0 || !strings.Contains(o.stderr, "resuming anyway (--force)") {
		t.Errorf("a fork of a changed ensemble with --force: exit %d %s", o.code, o.stderr)
	}
}

// A fork from the turn a run stopped at waiting for an answer waits for
// it too (the turn's pending questions are the fork's), and goes on with
// the answer given to it; the run forked still waits.
func TestResumeFromTurnOfARunThatWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, responses := filepath.Join(dir, "runs.db"), filepath.Join(dir, "writer.yaml")
	if err := os.WriteFile(responses, []byte("writer:\n  - {title: T, body: B}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ens := "../../examples/approval/ensemble.yaml"
	if o := ensembleCmd(t, "", "run", ens, "--responses", responses, "--state", db, "--run-id", "waits", "--output", "json"); o.code != 5 {
		t.Fatalf("run: exit %d %s", o.code, o.stderr)
	}
	o := ensembleCmd(t, "", "resume", db, "--run-id", "waits", "--from-turn", "1", "--output", "json")
	if o.code != 5 || !strings.Contains(o.stdout, `"pending_input"`) || !strings.Contains(o.stdout, `"agent": "approver"`) {
		t.Fatalf("a fork of a run that waits: exit %d %s%s", o.code, o.stdout, o.stderr)
	}
	o = ensembleCmd(t, "", "resume", db, "--run-id", "waits", "--from-turn", "1", "--answer", `approver={"approved": true}`, "--output", "json")
	if o.code != 0 || !strings.Contains(o.stdout, `"completion_reason": "completed"`) || !strings.Contains(o.stdout, `"publisher"`) {
		t.Fatalf("a fork answered: exit %d %s%s", o.code, o.stdout, o.stderr)
	}
	list := ensembleCmd(t, "", "state", "list", db)
	if lines := strings.Split(strings.TrimSpace(list.stdout), "\n"); len(lines) != 4 || !strings.Contains(lines[1], "awaiting_input") ||
		!strings.Contains(lines[2], "awaiting_input") || !strings.Contains(lines[3], "completed") || !strings.HasSuffix(lines[3], "waits at turn 1") {
		t.Errorf("state list:\n%s", list.stdout)
	}
}
