package serve

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Runs whose events wait, saves that write them, readers that come and
// go and compactions, all at once: every event a reader gets is in
// events.log under the number it was given, and a restart reads every
// event of every run under the same number.
func TestJournalReadersSavesAndCompactionsAtOnce(t *testing.T) {
	t.Parallel()
	j := testJournal(t)
	old := j.log("old") // a run that ended, which a compaction drops
	for i := 1; i <= 50; i++ {
		old.add("old", ev(i), false)
	}
	const runs, per = 4, 200
	data := func(id string, n int) string { return fmt.Sprintf(`{"%s":%d}`, id, n) }
	var wg sync.WaitGroup
	for r := range runs {
		id := fmt.Sprintf("r%d", r)
		wg.Add(2)
		go func() { // the run: its events wait; every few, a save
			defer wg.Done()
			l := j.log(id)
			for i := 1; i <= per; i++ {
				l.add(id, []byte(data(id, i)), true)
				if i%7 == 0 {
					journaled{j: j, l: l}.flush()
				}
			}
		}()
		go func() { // a reader, from where it stopped
			defer wg.Done()
			seen := 0
			for range 100 {
				evs, first, _ := j.log(id).after(seen)
				disk := "\n" + onDisk(t, j)
				for i, e := range evs {
					n := first + i
					if string(e) != data(id, n) {
						t.Errorf("%s: event %d is %s", id, n, e)
					}
					if line := fmt.Sprintf("\n%s\t%d\t%s\n", id, n, e); !strings.Contains(disk, line) {
						t.Errorf("%s: read event %d, which events.log does not hold", id, n)
					}
				}
				seen += len(evs)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := range 20 {
			if err := j.compact(map[string]bool{"old": k == 10}); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	j.flush()
	j2, err := openJournal(strings.TrimSuffix(j.dir, ".serve"))
	if err != nil {
		t.Fatal(err)
	}
	defer j2.close()
	for r := range runs {
		id := fmt.Sprintf("r%d", r)
		evs, _, _ := j2.log(id).after(0)
		if len(evs) != per {
			t.Errorf("%s: %d events after a restart, want %d", id, len(evs), per)
		}
		for i, e := range evs {
			if string(e) != data(id, i+1) {
				t.Errorf("%s: event %d is %s after a restart", id, i+1, e)
			}
		}
	}
}
