#!/usr/bin/env bash
# Prints the names of the environment variables it sees, one a line.
cat >/dev/null
env | cut -d= -f1 | sort
