# Echoes stdin (bash by extension).
cat
