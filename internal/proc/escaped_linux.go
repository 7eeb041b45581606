package proc

import (
	"bytes"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxEnviron caps what is read of a process's environment (a mark is the
// first entry of the environments it marks). Not through readcap, which
// reads text: an environment's entries are NUL-separated.
const maxEnviron = 64 << 10

// killEscaped kills every process of this user whose environment holds
// mark (see MarkEnv), found through /proc, and returns how many it
// killed. A process is pinned (pidfd) before its mark is read again and it
// is signalled, so that a process id reused meanwhile is never killed in
// its place. It makes passes until one finds none (at most 5): a marked
// process may start another while the first pass kills it.
func killEscaped(mark string) int {
	want := []byte(mark)
	self := os.Getpid()
	killed := 0
	for range 5 {
		n := 0
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return killed
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self || !marked(pid, want) {
				continue
			}
			if killPinned(pid, want) {
				n++
			}
		}
		killed += n
		if n == 0 {
			break
		}
	}
	return killed
}

// killPinned kills pid if, pinned, it still holds the mark.
func killPinned(pid int, want []byte) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false // gone, or a kernel without pidfds (before 5.3)
	}
	defer unix.Close(fd)
	if !marked(pid, want) {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// marked reports whether the environment of pid holds want as one of its
// entries. Another user's process cannot be read, and is not ours.
func marked(pid int, want []byte) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	env, err := io.ReadAll(io.LimitReader(f, maxEnviron))
	if err != nil {
		return false
	}
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(entry, want) {
			return true
		}
	}
	return false
}
