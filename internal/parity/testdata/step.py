#!/usr/bin/env python3
"""The scripts of the parity table: what one does is its parameter "do". Its
output depends only on what the engine gives it, so that every front door
gets the same."""
import json, os, sys, time

req = json.load(sys.stdin)
do = req["parameters"].get("do")
deps = req["dependencies"]
words = lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True)
if do == "greet":
    out = "hello, " + req["input"]
elif do == "shout":
    out = " ".join(words(deps[k]) for k in sorted(deps)).upper()
elif do == "split":
    out = req["input"].split()
elif do == "item":
    out = {"word": req["item"], "index": req["index"], "of": req["count"]}
elif do == "join":
    out = "+".join(words(v) for v in deps.get("each", []))
elif do == "block":
    # Parks the first run that reaches it until it is killed: the file
    # named by $PARITY_BLOCK is written with this process's id, and then it
    # sleeps (the test kills the run, and this process after it).
    marker = os.environ.get("PARITY_BLOCK")
    if marker and not os.path.exists(marker + ".done"):
        with open(marker + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(marker + ".tmp", marker)
        open(marker + ".done", "w").close()
        time.sleep(60)
    out = {"turn": req["turn"], "execution": req["execution"]}
else:
    out = {"seen": sorted(deps), "turn": req["turn"]}
print("%s: turn %d" % (req["agent"], req["turn"]), file=sys.stderr)
json.dump(out, sys.stdout)
