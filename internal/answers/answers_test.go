package answers_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ensemble-run/ensemble/ensemble"
	"github.com/ensemble-run/ensemble/internal/answers"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		pairs []string
		want  map[string]string
		err   string
	}{
		{"text and JSON", []string{"approver=yes", `reviewer={"ok": true}`, "empty="}, map[string]string{"approver": "yes", "reviewer": `{"ok": true}`, "empty": ""}, ""},
		{"an equals sign in the text", []string{"a=x=y"}, map[string]string{"a": "x=y"}, ""},
		{"no equals sign", []string{"approver"}, nil, `--answer "approver": give AGENT=TEXT`},
		{"no agent", []string{"=yes"}, nil, `give AGENT=TEXT`},
		{"twice", []string{"a=1", "a=2"}, nil, `"a" is answered twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]string{}
			err := answers.Parse(got, tc.pairs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v", got, err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, body string
		want       map[string]string
		err        string
	}{
		{"text and values", "approver: yes\nreviewer: {ok: true, notes: [a]}\n7: seven\n",
			map[string]string{"approver": "yes", "reviewer": `{"notes":["a"],"ok":true}`, "7": "seven"}, ""},
		{"empty", "", nil, "no answer in it"},
		{"a list", "- yes\n", nil, ":1:1: an answers file maps each agent to its answer"},
		{"twice", "a: 1\nb: 2\na: 3\n", nil, `:3:1: agent "a" is answered twice (first at line 1)`},
		{"two documents", "a: 1\n---\nb: 2\n", nil, "3:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := write(strings.ReplaceAll(tc.name, " ", "-")+".yaml", tc.body)
			got := map[string]string{}
			err := answers.ReadFile(path, got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err %v, want %q naming the file", err, tc.err)
				}
				if tc.name == "empty" && !errors.Is(err, answers.ErrNoAnswer) {
					t.Errorf("err %v is not ErrNoAnswer", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %q, want %q", k, got[k], v)
				}
			}
		})
	}
	// A file is read as an ensemble file is: never more than the cap.
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(ensemble.MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := answers.ReadFile(big, map[string]string{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over the cap: %v", err)
	}
	if err := answers.ReadFile(filepath.Join(dir, "missing.yaml"), map[string]string{}); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
}
