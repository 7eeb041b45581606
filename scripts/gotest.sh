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
exec 4>&1
status=$( { { "$@" 3>&- 4>&-; echo $? >&3; } | awk -f "$dir/timeouts.awk" 3>&- >&4; } 3>&1 )
exec 4>&-
exit "${status:-1}"
