#!/usr/bin/env python3
"""Counts its executions in count.log (in the ensemble's folder), a line
"INPUT AGENT" once it is done. The input "park" parks agent two's first
execution: it writes its pid to park.pid and sleeps until the test kills
it. The input "slow" sleeps a little in each agent."""
import json, os, sys, time

req = json.load(sys.stdin)
if req["input"] == "park" and req["agent"] == "two" and not os.path.exists("park.pid"):
    with open("park.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename("park.tmp", "park.pid")
    time.sleep(300)
if req["input"] == "slow":
    time.sleep(1)
with open("count.log", "a") as f:
    f.write("%s %s\n" % (req["input"], req["agent"]))
json.dump({"agent": req["agent"], "input": req["input"], "turn": req["turn"]}, sys.stdout)
