#!/usr/bin/env bash
# A script agent in shell: read the JSON object on stdin, print JSON on stdout.
set -euo pipefail
request=$(cat)
echo "$ENSEMBLE_AGENT: turn $ENSEMBLE_TURN, execution $ENSEMBLE_EXECUTION" >&2  # logs go to stderr
greeting=$(printf '%s' "$request" | sed -n 's/.*"greeting": *"\([^"]*\)".*/\1/p')
if [ -z "$greeting" ]; then
  echo '{"success": false, "error": "the greeter sent no greeting"}'
else
  printf '{"success": true, "data": "%s"}\n' "$(printf '%s' "$greeting" | tr '[:lower:]' '[:upper:]')"
fi
