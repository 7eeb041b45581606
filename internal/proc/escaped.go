package proc

import (
	"crypto/rand"
	"encoding/hex"
	"os"
)

// MarkEnv is the variable that marks every process a script starts: each
// run of a script gets a value of its own, which its children inherit,
// those that leave its process group (setsid, a daemon) included. When the
// script is stopped (a timeout, a cancellation, too much output) or leaves
// a process holding its pipes, the processes that still carry its mark are
// killed too (killEscaped). A process that clears its environment (env -i)
// is not found.
const MarkEnv = "ENSEMBLE_PROCESS"

// NewMark is a MarkEnv entry with a value no other process started has:
// the processes whose environment holds it (MarkedEnv) are killed by
// KillEscaped.
func NewMark() string {
	var b [16]byte
	rand.Read(b[:])
	return MarkEnv + "=" + hex.EncodeToString(b[:])
}

// MarkedEnv is env (nil: this process's) with mark first (within the
// bytes of an environment killEscaped reads), replacing any MarkEnv it
// holds (a script started by a script of another run).
func MarkedEnv(env []string, mark string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 1, len(env)+1)
	out[0] = mark
	for _, kv := range env {
		if len(kv) > len(MarkEnv) && kv[:len(MarkEnv)+1] == MarkEnv+"=" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// KillEscaped kills every process of this user whose environment holds
// mark, those that left their process group included (on Linux; elsewhere
// it finds none), and returns how many it killed.
func KillEscaped(mark string) int {
	if !isMark(mark) {
		return 0 // "" would match the empty entry after every environment's last NUL
	}
	return killEscaped(mark)
}

// isMark reports whether mark is a MarkEnv entry with a value.
func isMark(mark string) bool {
	return len(mark) > len(MarkEnv)+1 && mark[:len(MarkEnv)+1] == MarkEnv+"="
}
