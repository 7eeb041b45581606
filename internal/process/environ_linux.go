package process

import "golang.org/x/sys/unix"

// HideEnviron makes the process non-dumpable, so that the scripts it starts
// (same user, API keys stripped from their environment) cannot read the
// keys back from /proc/<ensemble's pid>/environ or attach to it with
// ptrace. It also turns off core dumps. Root, or a process with
// CAP_SYS_PTRACE, can still read it: run untrusted scripts as another user.
func HideEnviron() {
	// PR_SET_DUMPABLE with 0 cannot fail on Linux.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
