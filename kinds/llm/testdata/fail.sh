#!/usr/bin/env bash
# Always fails with a message on stderr.
cat >/dev/null
echo "region database is down" >&2
exit 3
