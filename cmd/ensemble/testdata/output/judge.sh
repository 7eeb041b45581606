#!/bin/sh
cat >/dev/null
echo '{"verdict": "yes"}'
