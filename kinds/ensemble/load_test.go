package ensemble_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	format "github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/kinds"
	nested "github.com/ensemble-run/ensemble/kinds/ensemble"
)

func load(t *testing.T, path string) (*format.Ensemble, error) {
	t.Helper()
	return format.Load(path, kinds.Builtin().Load(format.LoadOptions{LookupEnv: func(string) (string, bool) { return "", false }}))
}

// TestLoadChild: the child is loaded with the parent, and inherits its
// model profiles.
func TestLoadChild(t *testing.T) {
	t.Parallel()
	e, err := load(t, "testdata/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := nested.SpecOf(e.Agent("review_round"))
	if s.Child == nil || s.Child.Name != "review" || s.Output != "verdict" {
		t.Fatalf("spec %+v", s)
	}
	if s.Child.Models["fast"] == nil {
		t.Errorf("the child does not inherit the parent's model profiles: %v", s.Child.Models)
	}
	d, err := load(t, "testdata/dispatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ds := nested.SpecOf(d.Agent("handle"))
	if len(ds.Cases) != 2 || ds.Cases[0].Key != "bug" || ds.Cases[1].Child.Name != "feature" {
		t.Errorf("cases %+v", ds.Cases)
	}
}

// TestLoadErrors: the child's problems carry the child's position; cycles,
// unknown outputs, missing files, files outside the folder (refused
// unread) and bad loops and dispatches are load errors.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	_, err := load(t, "testdata/bad/parent.yaml")
	var list *format.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("err %v", err)
	}
	want := []string{
		`testdata/bad/child.yaml:5:22: agent "x": timeout_seconds must be at least 0.001 seconds (1ms), got -1`,
		`testdata/bad/parent.yaml:5:13: agent "a": output names no agent of ../flows/bug.yaml: "nobody"`,
		`testdata/bad/parent.yaml:10:15: agent "c": ensemble "missing.yaml": cannot read: no such file or directory`,
		`testdata/bad/parent.yaml:13:19: loop of agent "d": until does not compile`,
		`testdata/bad/parent.yaml:13:48: loop of agent "d": max_iterations must be at least 1, got 0`,
		`testdata/bad/parent.yaml:13:65: loop of agent "d": on_exhausted must be fail or succeed, got "maybe"`,
		`testdata/bad/parent.yaml:15:36: dispatch of agent "e": cases must not be empty`,
		`testdata/bad/parent.yaml:17:15: agent "f": ensemble "../../../../../../../../../../../../../etc/passwd" is outside the ensemble file's folder `,
		`testdata/bad/self.yaml:4:15: agent "again": ensemble "parent.yaml" includes a file that includes it: parent.yaml → self.yaml → parent.yaml`,
	}
	got := list.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %s", w)
		}
	}
	if len(*list) != len(want) {
		t.Errorf("errors:\n%s", got)
	}
	if strings.Contains(got, "root:") {
		t.Errorf("a line of /etc/passwd in the errors:\n%s", got)
	}
}

// TestNestingDepth: a file nested more than 5 deep is an error.
func TestNestingDepth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 7 {
		body := "name: l" + string(rune('0'+i)) + "\nagents:\n  - name: a\n    ensemble: l" + string(rune('1'+i)) + ".yaml\n"
		if i == 6 {
			body = "name: l6\nagents:\n  - name: a\n    ask: why\n"
		}
		writeFile(t, dir+"/l"+string(rune('0'+i))+".yaml", body)
	}
	_, err := load(t, dir+"/l0.yaml")
	if err == nil || !strings.Contains(err.Error(), `l5.yaml:4:15: agent "a": ensemble "l6.yaml" would nest ensembles 6 deep; at most 5 levels are allowed`) {
		t.Errorf("err %v", err)
	}
	writeFile(t, dir+"/l5.yaml", "name: l5\nagents:\n  - name: a\n    ask: why\n")
	if _, err := load(t, dir+"/l0.yaml"); err != nil {
		t.Errorf("5 levels: %v", err)
	}
}

// TestInheritance: a child uses its parent's tools and profiles unless it
// declares its own of the same name; a child that is not a regular file is
// an error.
func TestInheritance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/tool.sh", "#!/bin/sh\necho 1\n")
	if err := os.Chmod(dir+"/tool.sh", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir+"/parent.yaml", `name: p
models:
  fast: {provider: openai, model: parent-model, base_url: "http://127.0.0.1:1/v1"}
  slow: {provider: openai, model: parent-slow, base_url: "http://127.0.0.1:1/v1"}
tools:
  - {name: count, script: tool.sh}
agents:
  - {name: c, ensemble: child.yaml}
  - {name: dev, ensemble: /dev/null}
`)
	writeFile(t, dir+"/child.yaml", `name: c
models:
  slow: {provider: openai, model: child-slow, base_url: "http://127.0.0.1:1/v1"}
agents:
  - {name: a, model_profile: fast, tools: [count]}
  - {name: b, model_profile: slow}
`)
	_, err := load(t, dir+"/parent.yaml")
	if err == nil || !strings.Contains(err.Error(), `parent.yaml:9:27: agent "dev": ensemble "/dev/null" is not a regular file`) || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("err %v", err)
	}
	writeFile(t, dir+"/parent.yaml", strings.Replace(mustRead(t, dir+"/parent.yaml"), "  - {name: dev, ensemble: /dev/null}\n", "", 1))
	e, err := load(t, dir+"/parent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := nested.SpecOf(e.Agent("c")).Child
	if c.Models["fast"].Model != "parent-model" || c.Models["slow"].Model != "child-slow" || c.Tool("count") == nil {
		t.Errorf("child models %v, tools %v", c.Models, c.Tools)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTheBoundaryIsTheFolderRun: a child in ensembles/ may use the
// project's scripts/, since the folder of the file run holds both; a
// script above that folder is refused in the child too, and a child let in
// by allow_outside is bounded by its own folder.
func TestTheBoundaryIsTheFolderRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	project, common := dir+"/project", dir+"/common"
	writeFile(t, project+"/scripts/x.sh", "#!/bin/sh\necho '{}'\n")
	writeFile(t, common+"/own.sh", "#!/bin/sh\necho '{}'\n")
	for _, f := range []string{project + "/scripts/x.sh", common + "/own.sh"} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, project+"/ensembles/review.yaml", "name: review\nagents:\n  - {name: x, script: ../scripts/x.sh}\n")
	writeFile(t, common+"/lib.yaml", "name: lib\nagents:\n  - {name: own, script: own.sh}\n")
	writeFile(t, project+"/main.yaml", "name: main\nagents:\n  - {name: r, ensemble: ensembles/review.yaml}\n  - {name: l, ensemble: ../common/lib.yaml, allow_outside: true}\n")
	e, err := load(t, project+"/main.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c := nested.SpecOf(e.Agent("r")).Child; c == nil || c.Agent("x") == nil {
		t.Fatalf("child %+v", c)
	}

	writeFile(t, project+"/ensembles/review.yaml", "name: review\nagents:\n  - {name: x, script: ../../common/own.sh}\n")
	_, err = load(t, project+"/main.yaml")
	if err == nil || !strings.Contains(err.Error(), `review.yaml:3:23: agent "x": script "../../common/own.sh" is outside the folder of the ensemble file run, `+project) {
		t.Errorf("err %v", err)
	}
	writeFile(t, project+"/main.yaml", "name: main\nagents:\n  - {name: l, ensemble: ../common/lib.yaml}\n")
	_, err = load(t, project+"/main.yaml")
	if err == nil || !strings.Contains(err.Error(), `main.yaml:3:25: agent "l": ensemble "../common/lib.yaml" is outside the ensemble file's folder `+project) {
		t.Errorf("err %v", err)
	}
}

// A child let in from outside the folder by allow_outside may be no
// ensemble at all (a key file, /etc/passwd): its errors name kinds, never
// its values; nor does the error of a file run that is no mapping.
func TestOutsideChildIsNotEchoed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir+"/outside/key.txt", "sk-secret-value-0123456789\n")
	writeFile(t, dir+"/outside/secrets.yaml", "agents: sk-agents-0123456789\nname: [sk-name-0123456789]\n")
	writeFile(t, dir+"/project/main.yaml", "name: main\nagents:\n  - {name: k, ensemble: ../outside/key.txt, allow_outside: true}\n  - {name: s, ensemble: ../outside/secrets.yaml, allow_outside: true}\n")
	_, err := load(t, dir+"/project/main.yaml")
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{"key.txt:1:1: the file must be a mapping, got a string", "secrets.yaml:1:9: agents must be a list, got a string"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	var list *format.ErrorList
	if errors.As(err, &list) && strings.Contains(list.Pretty(), "sk-") {
		t.Errorf("a line of the file under an error:\n%s", list.Pretty())
	}
	writeFile(t, dir+"/project/passwd", "root:x:0:0:root:/root:/bin/bash\n")
	_, err2 := load(t, dir+"/project/passwd")
	for _, e := range []error{err, err2} {
		if e == nil || strings.Contains(e.Error(), "sk-") || strings.Contains(e.Error(), "/bin/bash") {
			t.Errorf("a value of the file in the error:\n%v", e)
		}
	}
}
