# Starts a sleeping grandchild, records its pid, then hangs.
sleep 300 &
echo $! > "$PIDFILE"
sleep 300
