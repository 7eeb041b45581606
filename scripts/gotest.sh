#!/bin/sh
# Runs a command, go test with its arguments (scripts/gotest.sh go test
# -timeout 30m ./...), with its standard output through timeouts.awk: a
# test that runs past -timeout is then one line naming the running tests,
# not go's dump of every goroutine. Its standard error is left as it is.
# The exit status is the command's: make runs recipes with /bin/sh, which
# may have no `set -o pipefail`, so the status goes round the pipe on
# file descriptor 3 instead.
# Plain sh: it runs the tests wherever make test does.
dir=${0%/*}
[ "$dir" = "$0" ] && dir=.
# mawk (Debian's awk) reads a pipe a block at a time, which would hold
# go test's lines back until a block fills: -W interactive makes it read
# a line at a time. Other awks (gawk, busybox) read what comes, and warn
# about or refuse the option: it is given only to an awk that takes it
# silently.
interactive=
if [ -z "$(awk -W interactive 'BEGIN { exit 0 }' 2>&1 </dev/null)" ] &&
	awk -W interactive 'BEGIN { exit 0 }' </dev/null 2>/dev/null; then
	interactive="-W interactive"
fi
exec 4>&1
# shellcheck disable=SC2086 # $interactive is one option or none
status=$( { { "$@" 3>&- 4>&-; echo $? >&3; } | awk $interactive -f "$dir/timeouts.awk" 3>&- >&4; } 3>&1 )
exec 4>&-
exit "${status:-1}"
