#!/usr/bin/env bash
# Prints "echo:" and the arguments object it got on stdin.
args=$(cat)
printf 'echo:%s\n' "$args"
