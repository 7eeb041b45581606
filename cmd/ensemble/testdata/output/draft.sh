#!/bin/sh
cat >/dev/null
echo '"a draft"'
