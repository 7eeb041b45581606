#!/bin/sh
# Checks the tools `make test` needs and prints, in one line, every one that
# is missing, before anything starts. With "race" it also wants the C
# compiler that the race detector (cgo) needs.
# Plain sh with shell builtins only: it must run where bash or coreutils are
# missing, to say so.
missing=""
add() { missing="${missing:+$missing, }$1"; }

if command -v go >/dev/null 2>&1; then
	v=$(go env GOVERSION 2>/dev/null)
	case "$v" in
	go[0-9]*.[0-9]*)
		n=${v#go}
		major=${n%%.*}
		minor=${n#*.}
		minor=${minor%%[!0-9]*}
		if [ "$major" -lt 1 ] || { [ "$major" -eq 1 ] && [ "${minor:-0}" -lt 26 ]; }; then
			add "go >= 1.26 (found $v)"
		fi
		;;
	devel*) ;; # a development build: newer than any release
	*) add "go >= 1.26 (\`go env GOVERSION\` says \"$v\")" ;;
	esac
else
	add "go >= 1.26"
fi
for tool in make bash python3 git; do
	command -v "$tool" >/dev/null 2>&1 || add "$tool"
done
if [ "$1" = race ]; then
	cc=${CC:-}
	[ -n "$cc" ] || { command -v go >/dev/null 2>&1 && cc=$(go env CC 2>/dev/null); }
	command -v "${cc%% *}" >/dev/null 2>&1 || add "a C compiler for the race detector (${cc:-gcc}: apt-get install build-essential)"
fi

if [ -n "$missing" ]; then
	echo "missing prerequisites: $missing (see README.md)" >&2
	exit 1
fi
