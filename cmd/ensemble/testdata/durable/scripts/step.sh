#!/usr/bin/env bash
# One step of the durable-run tests. It prints who ran when; the seed also
# prints the ENSEMBLE_* variables it sees (a key must never be among them),
# less ENSEMBLE_PROCESS, an id that differs at every execution.
# When $DURABLE_DIR is set, the first execution in turn $BLOCK_TURN blocks
# (with a child process) after writing "SCRIPT_PID CHILD_PID" to
# $DURABLE_DIR/pids, so a test can interrupt the run mid-turn; the marker
# $DURABLE_DIR/blocked makes a rerun go straight through. Every execution
# is logged to $DURABLE_DIR/log as "AGENT EXECUTION TURN".
set -eu
cat >/dev/null
if [ -n "${DURABLE_DIR:-}" ]; then
  echo "$ENSEMBLE_AGENT $ENSEMBLE_EXECUTION $ENSEMBLE_TURN" >> "$DURABLE_DIR/log"
fi
if [ -n "${DURABLE_DIR:-}" ] && [ "$ENSEMBLE_TURN" = "${BLOCK_TURN:-0}" ] && mkdir "$DURABLE_DIR/blocked" 2>/dev/null; then
  sleep 60 &
  echo "$$ $!" > "$DURABLE_DIR/pids.tmp"
  mv "$DURABLE_DIR/pids.tmp" "$DURABLE_DIR/pids"
  wait
fi
if [ "$ENSEMBLE_AGENT" = seed ]; then
  exec python3 -c 'import json, os; print(json.dumps({"env": {k: v for k, v in os.environ.items() if k.startswith("ENSEMBLE_") and k != "ENSEMBLE_PROCESS"}}))'
fi
printf '{"agent": "%s", "execution": %s, "turn": %s}\n' "$ENSEMBLE_AGENT" "$ENSEMBLE_EXECUTION" "$ENSEMBLE_TURN"
