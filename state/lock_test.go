package state_test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ensemble-run/ensemble/state"
)

func TestLockIsExclusiveUntilReleased(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.json")
	unlock, err := state.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files: a second open, even in this
	// process, is refused, as another process would be.
	if _, err := state.Lock(path); !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	// Another process sees the lock too.
	if out, err := exec.Command("flock", "-n", path+".lock", "true").CombinedOutput(); err == nil {
		t.Fatalf("flock(1) got the lock: %s", out)
	} else if _, ok := err.(*exec.ExitError); !ok {
		t.Logf("flock(1) not available: %v", err)
	}
	unlock()
	again, err := state.Lock(path)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again()
}

func TestResumable(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]bool{"": true, "timeout": true, "cancelled": true, "completed": false, "max_total_turns": false} {
		if got := (&state.File{CompletionReason: reason}).Resumable(); got != want {
			t.Errorf("%q: %v, want %v", reason, got, want)
		}
	}
}
