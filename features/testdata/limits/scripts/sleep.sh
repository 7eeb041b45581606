#!/usr/bin/env bash
# Sleep long enough to be killed by a timeout.
sleep 30
echo '"woke up"'
