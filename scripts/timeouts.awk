# Filters the output of go test: a test binary that ran past -timeout
# prints "panic: test timed out after D", the tests that were running, then
# every goroutine's stack (hundreds of lines for a large package). This
# keeps one line of it, the panic and the running tests,
#   panic: test timed out after 30m0s; running: TestRun/kill (29m59s), TestResume (30m0s)
# and drops the stacks, up to go test's own line for the package
# (FAIL<TAB>package<TAB>time). Everything else goes through as it is.
# POSIX awk (mawk, gawk, busybox); used by scripts/gotest.sh.

function flush_panic() {
	print head (names == "" ? "" : "; running: " names)
	fflush()
	state = "stacks"
}

state == "" && /^panic: test timed out after / {
	head = $0
	names = ""
	state = "running"
	next
}

state == "running" {
	if ($0 ~ /^\trunning tests:$/)
		next
	if ($0 ~ /^\t\t[^\t]/) {
		name = $0
		sub(/^\t\t/, "", name)
		names = names (names == "" ? "" : ", ") name
		next
	}
	flush_panic() # the list ended: the stacks begin
}

state == "stacks" {
	# go test's lines after a test binary ended: its verdict on the
	# package, the binary's exit status, or the next test's output (-v).
	if ($0 !~ /^(FAIL|ok  |PASS$|exit status [0-9]+$|=== |--- |\?   )/)
		next
	state = ""
}

# Each line as it comes: go test's lines for a package are its progress,
# and its standard error (build errors, vet) is not held back.
{ print; fflush() }

END {
	if (state == "running")
		flush_panic()
}
