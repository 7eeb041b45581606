#!/usr/bin/env bash
# Concurrency probe. Arguments {"name": N, "after": M}: waits (up to 10 s)
# until the call named M has finished, then marks N finished in
# $RENDEZVOUS_DIR. Run one after the other, a call waiting for a later one
# fails; run concurrently, both succeed and the waiting one finishes last.
args=$(cat)
name=$(printf '%s' "$args" | sed -n 's/.*"name"[[:space:]]*:[[:space:]]*"\([a-z]*\)".*/\1/p')
after=$(printf '%s' "$args" | sed -n 's/.*"after"[[:space:]]*:[[:space:]]*"\([a-z]*\)".*/\1/p')
if [ -n "$after" ]; then
	for _ in $(seq 200); do
		[ -e "$RENDEZVOUS_DIR/$after" ] && break
		sleep 0.05
	done
	if [ ! -e "$RENDEZVOUS_DIR/$after" ]; then
		echo "$after never finished: the calls did not run concurrently" >&2
		exit 1
	fi
fi
touch "$RENDEZVOUS_DIR/$name"
printf 'finished %s\n' "$name"
