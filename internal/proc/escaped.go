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

// newMark is a MarkEnv entry with a value no other run of a script has.
func newMark() string {
	var b [16]byte
	rand.Read(b[:])
	return MarkEnv + "=" + hex.EncodeToString(b[:])
}

// markedEnv is env (nil: this process's) with mark first (within the
// bytes of an environment killEscaped reads), replacing any MarkEnv it
// holds (a script started by a script of another run).
func markedEnv(env []string, mark string) []string {
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
