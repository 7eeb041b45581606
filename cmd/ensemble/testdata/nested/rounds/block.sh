#!/bin/sh
# Blocks the first time (writing its pid to $NESTED_DIR/blocked), answers
# at once afterwards.
cat >/dev/null
echo "$ENSEMBLE_AGENT" >> "$NESTED_DIR/log"
if [ ! -e "$NESTED_DIR/blocked" ]; then
  echo $$ > "$NESTED_DIR/blocked"
  exec sleep 60
fi
echo '"done"'
