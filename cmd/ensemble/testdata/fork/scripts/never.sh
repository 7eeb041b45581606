#!/bin/sh
# Every execution of the fork tests' agents is injected: this never runs.
echo "never.sh ran: an execution was not injected" >&2
exit 1
