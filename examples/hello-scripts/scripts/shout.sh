#!/usr/bin/env bash
# A script agent in shell: read the JSON object on stdin, print JSON on stdout.
# Shell has no JSON parser of its own: python3 (which greet.py needs too)
# reads the greeting out of the request and writes the answer, so that any
# greeting (quotes, backslashes, newlines) comes through whole.
set -euo pipefail
request=$(cat)
echo "$ENSEMBLE_AGENT: turn $ENSEMBLE_TURN, execution $ENSEMBLE_EXECUTION" >&2  # logs go to stderr
greeting=$(printf '%s' "$request" | python3 -c '
import json, sys
greeter = json.load(sys.stdin)["dependencies"].get("greeter")
print(greeter.get("greeting", "") if isinstance(greeter, dict) else "", end="")')
if [ -z "$greeting" ]; then
  echo '{"success": false, "error": "the greeter sent no greeting"}'
else
  printf '%s' "$greeting" | tr '[:lower:]' '[:upper:]' |
    python3 -c 'import json, sys; print(json.dumps({"success": True, "data": sys.stdin.read()}))'
fi
