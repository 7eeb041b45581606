#!/bin/sh
echo "bad key sk-cli-secret-0123456789" >&2
exit 3
