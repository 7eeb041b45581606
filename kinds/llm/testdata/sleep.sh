#!/usr/bin/env bash
# Sleeps for the "seconds" argument, then prints "slept <seconds>".
args=$(cat)
s=$(printf '%s' "$args" | sed -n 's/.*"seconds"[[:space:]]*:[[:space:]]*\([0-9.]*\).*/\1/p')
sleep "${s:-0}"
printf 'slept %s\n' "${s:-0}"
