#!/bin/sh
# Logs the agent that ran, in $NESTED_DIR/log.
cat >/dev/null
echo "$ENSEMBLE_AGENT" >> "$NESTED_DIR/log"
echo '"logged"'
