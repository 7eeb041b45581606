package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A write that failed and could not be cut back leaves its lines in
// events.log, and the events after it take their numbers again. Read back,
// the later line of a number is the run's event (it is the one a reader
// could have been sent), and the stale lines after the first repeated
// number go with it.
func TestJournalLaterLineOfANumberWins(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "s.db")
	dir := state + ".serve"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"r1\t1\t{\"n\":1}", "r1\t2\t{\"n\":2}",
		"r1\t3\t{\"stale\":3}", "r2\t1\t{\"other\":1}", "r1\t4\t{\"stale\":4}", // the failed write's
		"r1\t3\t{\"n\":3}", "r1\t4\t{\"n\":4}", "r1\t5\t{\"n\":5}",
	}
	if err := os.WriteFile(filepath.Join(dir, "events.log"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(state)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	got, _, _ := j.log("r1").after(0)
	var texts []string
	for _, b := range got {
		texts = append(texts, string(b))
	}
	if want := `{"n":1} {"n":2} {"n":3} {"n":4} {"n":5}`; strings.Join(texts, " ") != want {
		t.Fatalf("r1's events %q, want %s", texts, want)
	}
	if got, _, _ := j.log("r2").after(0); len(got) != 1 || string(got[0]) != `{"other":1}` {
		t.Fatalf("r2's events %q", got)
	}
}
