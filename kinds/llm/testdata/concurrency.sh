#!/usr/bin/env bash
# Concurrency probe: marks itself running in $PROBE_DIR/running, records how
# many calls were running then in $PROBE_DIR/seen, runs a little, and
# unmarks. What it records never exceeds the calls really running at once.
mkdir -p "$PROBE_DIR/running" "$PROBE_DIR/seen"
touch "$PROBE_DIR/running/$$"
n=$(ls "$PROBE_DIR/running" | wc -l)
echo "$n" > "$PROBE_DIR/seen/$$"
sleep 0.05
rm -f "$PROBE_DIR/running/$$"
cat
