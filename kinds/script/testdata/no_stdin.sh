# Never reads stdin.
echo '"ignored stdin"'
