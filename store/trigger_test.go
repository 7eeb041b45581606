package store_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ensemble-run/ensemble/store"
)

// A fire is claimed once across connections (as two processes hold
// theirs), and WatchTrigger keeps the first time a trigger was watched.
func TestClaimFireOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.db")
	var dbs []*store.DB
	for i := range 4 {
		db, err := store.Open(path, i == 0, store.SyncNormal)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	since, last, err := dbs[0].WatchTrigger("e", "cron * * * * * UTC", t0)
	if err != nil || !since.Equal(t0) || last != nil {
		t.Fatalf("first watch: %v %v %v", since, last, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for _, db := range dbs {
		wg.Go(func() {
			for m := range 3 {
				ok, err := db.ClaimFire("e", "cron * * * * * UTC", t0.Add(time.Duration(m)*time.Minute), "run", t0)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if wins != 3 {
		t.Errorf("%d claims won for 3 fires", wins)
	}
	since, last, err = dbs[1].WatchTrigger("e", "cron * * * * * UTC", t0.Add(time.Hour))
	if err != nil || !since.Equal(t0) || last == nil || !last.Time.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("second watch: %v %+v %v", since, last, err)
	}
	fires, err := dbs[2].Fires("e", "cron * * * * * UTC")
	if err != nil || len(fires) != 3 {
		t.Errorf("fires: %+v %v", fires, err)
	}
	if fires, err := dbs[2].Fires("e", "other"); err != nil || len(fires) != 0 {
		t.Errorf("another trigger's fires: %+v %v", fires, err)
	}
}
