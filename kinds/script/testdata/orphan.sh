# Leaves a grandchild holding stdout, and exits successfully at once.
sleep 300 &
echo $! > "$PIDFILE"
echo '{"done": true}'
